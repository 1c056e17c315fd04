/* psa_l2switch: l2switch.p4 written for PSA (psa.p4): forward by VLAN and
 * destination MAC (exact match table), drop unknown unicast (PSA drops
 * unless the program sends: ostd.drop starts true), send broadcast to
 * PSA_PORT_CPU for the slow path, count table hits with a DirectCounter,
 * never hairpin. VLAN tags are parsed and kept. The egress pipeline parses
 * nothing and emits nothing: the packet leaves as ingress deparsed it. */
#include <core.p4>
#include <psa.p4>

typedef bit<48> mac_addr_t;
const bit<16> TYPE_VLAN = 0x8100;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
    vlan_t     vlan;
}

struct metadata_t {
    bit<12> vid;
}

struct empty_t { }

parser SwParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                in psa_ingress_parser_input_metadata_t istd,
                in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_VLAN: parse_vlan;
            default: accept;
        }
    }
    state parse_vlan {
        packet.extract(hdr.vlan);
        meta.vid = hdr.vlan.vid;
        transition accept;
    }
}

control SwIngress(inout headers_t hdr, inout metadata_t meta,
                  in psa_ingress_input_metadata_t istd,
                  inout psa_ingress_output_metadata_t ostd) {
    DirectCounter<bit<64>>(PSA_CounterType_t.PACKETS_AND_BYTES) dmac_hits;

    /* A PSA DirectCounter counts when the action calls count(), unlike
     * v1model's direct_counter, which counts every hit. */
    action forward(PortId_t port) {
        dmac_hits.count();
        send_to_port(ostd, port);
    }
    action drop() {
        dmac_hits.count();
        ingress_drop(ostd);
    }

    @name("mac_table")
    table dmac {
        key = {
            meta.vid             : exact @name("vid");
            hdr.ethernet.dstAddr : exact @name("dst");
        }
        actions = { forward; drop; @defaultonly NoAction; }
        const default_action = drop();
        psa_direct_counter = dmac_hits;
        size = 4096;
    }

    apply {
        if (hdr.ethernet.dstAddr == 0xffffffffffff) {
            send_to_port(ostd, PSA_PORT_CPU);
            return;
        }
        dmac.apply();
        if (ostd.egress_port == istd.ingress_port) {
            ingress_drop(ostd); /* never hairpin */
        }
    }
}

control SwIngressDeparser(packet_out packet, out empty_t clone_i2e_meta,
                          out empty_t resubmit_meta, out empty_t normal_meta,
                          inout headers_t hdr, in metadata_t meta,
                          in psa_ingress_output_metadata_t istd) {
    apply { packet.emit(hdr); }
}

parser SwEgressParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                      in psa_egress_parser_input_metadata_t istd,
                      in empty_t normal_meta, in empty_t clone_i2e_meta,
                      in empty_t clone_e2e_meta) {
    state start { transition accept; }
}

control SwEgress(inout headers_t hdr, inout metadata_t meta,
                 in psa_egress_input_metadata_t istd,
                 inout psa_egress_output_metadata_t ostd) { apply { } }

control SwEgressDeparser(packet_out packet, out empty_t clone_e2e_meta,
                         out empty_t recirculate_meta, inout headers_t hdr,
                         in metadata_t meta, in psa_egress_output_metadata_t istd,
                         in psa_egress_deparser_input_metadata_t edstd) { apply { } }

IngressPipeline(SwParser(), SwIngress(), SwIngressDeparser()) ip;
EgressPipeline(SwEgressParser(), SwEgress(), SwEgressDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
