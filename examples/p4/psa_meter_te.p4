/* psa_meter_te: meter_te.p4 written for PSA (psa.p4), with PSA's direct
 * externs, which act where the action calls them. The controller installs,
 * per flow (IPv4 source and destination), a primary port and an
 * alternative port, and gives the flow's entry a DirectMeter whose
 * committed rate is what the primary path should carry. A flow within its
 * committed rate (GREEN) takes the primary port, above it (YELLOW) the
 * alternative port, above its peak rate (RED) it is dropped. A
 * DirectCounter counts, per flow, the packets taken off the primary path:
 * only the action's count() calls count, not every hit. PSA drops unless
 * the program sends. */
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

parser TeParser(packet_in packet, out headers hdr, inout metadata meta,
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

control TeIngress(inout headers hdr, inout metadata meta,
                  in psa_ingress_input_metadata_t istd,
                  inout psa_ingress_output_metadata_t ostd) {
    // per flow entry: committed rate = what the primary path carries
    DirectMeter(PSA_MeterType_t.BYTES) flow_meter;
    // per flow entry: packets re-routed or dropped by the meter
    DirectCounter<bit<64>>(PSA_CounterType_t.PACKETS_AND_BYTES) off_primary;

    action route(PortId_t port, PortId_t alt_port) {
        PSA_MeterColor_t color = flow_meter.execute();
        if (color == PSA_MeterColor_t.GREEN) {
            send_to_port(ostd, port);
        } else if (color == PSA_MeterColor_t.YELLOW) {
            off_primary.count();
            send_to_port(ostd, alt_port);
        } else {
            off_primary.count();
            ingress_drop(ostd);
        }
    }
    table flows {
        key = {
            hdr.ipv4.srcAddr : exact;
            hdr.ipv4.dstAddr : exact;
        }
        actions = { route; NoAction; }
        default_action = NoAction();
        psa_direct_meter = flow_meter;
        psa_direct_counter = off_primary;
        size = 1024;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            flows.apply();
        }
    }
}

control TeIngressDeparser(packet_out packet, out empty_t clone_i2e_meta,
                          out empty_t resubmit_meta, out empty_t normal_meta,
                          inout headers hdr, in metadata meta,
                          in psa_ingress_output_metadata_t istd) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

parser TeEgressParser(packet_in packet, out headers hdr, inout metadata meta,
                      in psa_egress_parser_input_metadata_t istd,
                      in empty_t normal_meta, in empty_t clone_i2e_meta,
                      in empty_t clone_e2e_meta) {
    state start { transition accept; }
}

control TeEgress(inout headers hdr, inout metadata meta,
                 in psa_egress_input_metadata_t istd,
                 inout psa_egress_output_metadata_t ostd) { apply { } }

control TeEgressDeparser(packet_out packet, out empty_t clone_e2e_meta,
                         out empty_t recirculate_meta, inout headers hdr,
                         in metadata meta, in psa_egress_output_metadata_t istd,
                         in psa_egress_deparser_input_metadata_t edstd) { apply { } }

IngressPipeline(TeParser(), TeIngress(), TeIngressDeparser()) ip;
EgressPipeline(TeEgressParser(), TeEgress(), TeEgressDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
