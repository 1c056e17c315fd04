/* psa_l3fwd: l3fwd.p4 written for PSA (psa.p4). Ingress parses Ethernet
 * and IPv4 and looks the IPv4 destination up (longest prefix); on a hit it
 * rewrites both MAC addresses and decrements the TTL; anything else is
 * dropped (PSA drops unless the program sends). The ingress deparser recomputes
 * the IPv4 checksum with an InternetChecksum. The egress pipeline parses
 * nothing and emits nothing: the packet leaves as ingress deparsed it. */
#include <core.p4>
#include <psa.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen;
    bit<16> identification; bit<3> flags; bit<13> fragOffset;
    bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { }
struct empty_t { }

parser FwdParser(packet_in packet, out headers hdr, inout metadata meta,
                 in psa_ingress_parser_input_metadata_t istd,
                 in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control FwdIngress(inout headers hdr, inout metadata meta,
                   in psa_ingress_input_metadata_t istd,
                   inout psa_ingress_output_metadata_t ostd) {
    action forward(bit<48> srcAddr, bit<48> dstAddr, PortId_t port) {
        hdr.ethernet.srcAddr = srcAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        send_to_port(ostd, port);
    }
    table routes {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            routes.apply();
        }
    }
}

control FwdIngressDeparser(packet_out packet, out empty_t clone_i2e_meta,
                           out empty_t resubmit_meta, out empty_t normal_meta,
                           inout headers hdr, in metadata meta,
                           in psa_ingress_output_metadata_t istd) {
    InternetChecksum() ck;
    apply {
        if (hdr.ipv4.isValid()) {
            ck.clear();
            ck.add({ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
                     hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
                     hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr });
            hdr.ipv4.hdrChecksum = ck.get();
        }
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

parser FwdEgressParser(packet_in packet, out headers hdr, inout metadata meta,
                       in psa_egress_parser_input_metadata_t istd,
                       in empty_t normal_meta, in empty_t clone_i2e_meta,
                       in empty_t clone_e2e_meta) {
    state start { transition accept; }
}

control FwdEgress(inout headers hdr, inout metadata meta,
                  in psa_egress_input_metadata_t istd,
                  inout psa_egress_output_metadata_t ostd) { apply { } }

control FwdEgressDeparser(packet_out packet, out empty_t clone_e2e_meta,
                          out empty_t recirculate_meta, inout headers hdr,
                          in metadata meta, in psa_egress_output_metadata_t istd,
                          in psa_egress_deparser_input_metadata_t edstd) { apply { } }

IngressPipeline(FwdParser(), FwdIngress(), FwdIngressDeparser()) ip;
EgressPipeline(FwdEgressParser(), FwdEgress(), FwdEgressDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
