/* PSA colour-aware DirectMeter.execute(color) (psa_dmeter.stf), on an
 * exact table (t, by source MAC) and a ternary one (t2, by destination
 * MAC). The packet: Ethernet, then pre (the colour given: RED 0, GREEN 1,
 * YELLOW 2) and the colours t's and t2's actions got (same coding). */
#include <core.p4>
#include <psa.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header probe_t { bit<8> pre; bit<8> color; bit<8> color2; }
struct headers { ethernet_t eth; probe_t probe; }
struct empty_t { }

bit<8> code(in PSA_MeterColor_t c) {
    if (c == PSA_MeterColor_t.RED) { return 0; }
    if (c == PSA_MeterColor_t.GREEN) { return 1; }
    return 2;
}

parser IgParser(packet_in pkt, out headers hdr, inout empty_t meta,
                in psa_ingress_parser_input_metadata_t istd,
                in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control Ig(inout headers hdr, inout empty_t meta,
           in psa_ingress_input_metadata_t istd,
           inout psa_ingress_output_metadata_t ostd) {
    DirectMeter(PSA_MeterType_t.PACKETS) dm;
    DirectMeter(PSA_MeterType_t.PACKETS) dm2;
    PSA_MeterColor_t pre = PSA_MeterColor_t.GREEN;

    action aware() { hdr.probe.color = code(dm.execute(pre)); }
    action blind() { hdr.probe.color = code(dm.execute()); }
    action aware2() { hdr.probe.color2 = code(dm2.execute(pre)); }
    table t {
        key = { hdr.eth.src : exact; }
        actions = { aware; blind; }
        default_action = aware();
        psa_direct_meter = dm;
    }
    table t2 {
        key = { hdr.eth.dst : ternary; }
        actions = { aware2; NoAction; }
        default_action = NoAction();
        psa_direct_meter = dm2;
    }

    apply {
        if (hdr.probe.pre == 0) { pre = PSA_MeterColor_t.RED; }
        if (hdr.probe.pre == 2) { pre = PSA_MeterColor_t.YELLOW; }
        t.apply();
        t2.apply();
        send_to_port(ostd, (PortId_t)1);
    }
}

control IgDeparser(packet_out pkt, out empty_t clone_i2e_meta,
                   out empty_t resubmit_meta, out empty_t normal_meta,
                   inout headers hdr, in empty_t meta,
                   in psa_ingress_output_metadata_t istd) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.probe); }
}

parser EgParser(packet_in pkt, out headers hdr, inout empty_t meta,
                in psa_egress_parser_input_metadata_t istd,
                in empty_t normal_meta, in empty_t clone_i2e_meta,
                in empty_t clone_e2e_meta) {
    state start { transition accept; }
}

control Eg(inout headers hdr, inout empty_t meta,
           in psa_egress_input_metadata_t istd,
           inout psa_egress_output_metadata_t ostd) {
    apply { }
}

control EgDeparser(packet_out pkt, out empty_t clone_e2e_meta,
                   out empty_t recirculate_meta, inout headers hdr,
                   in empty_t meta, in psa_egress_output_metadata_t istd,
                   in psa_egress_deparser_input_metadata_t edstd) {
    apply { }
}

IngressPipeline(IgParser(), Ig(), IgDeparser()) ip;
EgressPipeline(EgParser(), Eg(), EgDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
