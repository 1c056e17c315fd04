/* psa_l2switch: l2switch.p4 written for PSA (psa.p4): forward by
 * destination MAC (exact match), drop unknown unicast (PSA drops unless
 * the program sends: ostd.drop starts true), send broadcast to
 * PSA_PORT_CPU (the slow path), count table hits with a DirectCounter.
 * The egress pipeline parses the packet again and drops what would leave
 * by the port it came in on. */
#include <core.p4>
#include <psa.p4>

typedef bit<48> mac_addr_t;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

struct headers_t { ethernet_t ethernet; }
struct metadata_t { PortId_t ingress_port; }
struct empty_t { }

/* what the ingress deparser passes to the egress parser (normal_meta) */
struct bridged_t { PortId_t ingress_port; }

parser SwParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                in psa_ingress_parser_input_metadata_t istd,
                in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control SwIngress(inout headers_t hdr, inout metadata_t meta,
                  in psa_ingress_input_metadata_t istd,
                  inout psa_ingress_output_metadata_t ostd) {
    DirectCounter<bit<32>>(PSA_CounterType_t.PACKETS_AND_BYTES) dmac_hits;

    action forward(PortId_t port) {
        send_to_port(ostd, port);
        dmac_hits.count();
    }
    action drop() {
        ingress_drop(ostd);
        dmac_hits.count();
    }

    @name("mac_table")
    table dmac {
        key = { hdr.ethernet.dstAddr : exact @name("dst"); }
        actions = { forward; drop; @defaultonly NoAction; }
        const default_action = NoAction();
        psa_direct_counter = dmac_hits;
        size = 4096;
    }

    apply {
        meta.ingress_port = istd.ingress_port;
        if (hdr.ethernet.dstAddr == 0xffffffffffff) {
            send_to_port(ostd, PSA_PORT_CPU);
            return;
        }
        dmac.apply();
    }
}

control SwIngressDeparser(packet_out packet, out empty_t clone_i2e_meta,
                          out empty_t resubmit_meta, out bridged_t normal_meta,
                          inout headers_t hdr, in metadata_t meta,
                          in psa_ingress_output_metadata_t istd) {
    apply {
        normal_meta.ingress_port = meta.ingress_port;
        packet.emit(hdr.ethernet);
    }
}

parser SwEgressParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                      in psa_egress_parser_input_metadata_t istd,
                      in bridged_t normal_meta, in empty_t clone_i2e_meta,
                      in empty_t clone_e2e_meta) {
    state start {
        meta.ingress_port = normal_meta.ingress_port;
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control SwEgress(inout headers_t hdr, inout metadata_t meta,
                 in psa_egress_input_metadata_t istd,
                 inout psa_egress_output_metadata_t ostd) {
    apply {
        if (meta.ingress_port == istd.egress_port) {
            egress_drop(ostd); /* would hairpin */
        }
    }
}

control SwEgressDeparser(packet_out packet, out empty_t clone_e2e_meta,
                         out empty_t recirculate_meta, inout headers_t hdr,
                         in metadata_t meta, in psa_egress_output_metadata_t istd,
                         in psa_egress_deparser_input_metadata_t edstd) {
    apply { packet.emit(hdr.ethernet); }
}

IngressPipeline(SwParser(), SwIngress(), SwIngressDeparser()) ip;
EgressPipeline(SwEgressParser(), SwEgress(), SwEgressDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
