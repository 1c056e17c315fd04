/* meters: a packets meter and a bytes meter (RFC 2698 two-rate three-colour
 * marker) per ingress port; the colour is written into the packet, RED is
 * dropped. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header color_t {
    bit<8> pkts;
    bit<8> bytes;
}

struct headers_t {
    ethernet_t eth;
    color_t    c;
}

struct metadata_t {}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        packet.extract(hdr.c);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    meter(4, MeterType.packets) pkt_meter;
    meter(4, MeterType.bytes) byte_meter;

    apply {
        bit<2> c1;
        bit<32> c2;
        pkt_meter.execute_meter((bit<32>)sm.ingress_port, c1);
        byte_meter.execute_meter((bit<32>)sm.ingress_port, c2);
        hdr.c.pkts = (bit<8>)c1;
        hdr.c.bytes = (bit<8>)c2;
        sm.egress_spec = 1;
        if (c1 == 2) { // RED
            mark_to_drop(sm);
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.c);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
