/* The UDP checksum over the payload (payload_csum.stf; stf's
 * TestPayloadChecksum runs payloads of every length class at both hooks,
 * BenchmarkPayloadChecksum measures them): a frame whose UDP checksum
 * verifies (verify_checksum_with_payload) goes out of port 1 with its
 * checksum computed again (update_checksum_with_payload, from 0); one
 * that does not goes out of port 2, unchanged. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header udp_t { bit<16> srcPort; bit<16> dstPort; bit<16> length; bit<16> checksum; }
struct H { ethernet_t eth; ipv4_t ipv4; udp_t udp; }
struct M { }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) { 17: udp; default: accept; }
    }
    state udp { pkt.extract(hdr.udp); transition accept; }
}

control V(inout H hdr, inout M m) {
    apply {
        verify_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, hdr.udp.length,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.length },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (sm.checksum_error == 1) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
            hdr.udp.checksum = 0;
        }
    }
}

control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }

control C(inout H hdr, inout M m) {
    apply {
        update_checksum_with_payload(hdr.udp.isValid() && hdr.udp.checksum == 0,
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, hdr.udp.length,
              hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.length },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in H hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); pkt.emit(hdr.udp); }
}

V1Switch(P(), V(), Ig(), E(), C(), D()) main;
