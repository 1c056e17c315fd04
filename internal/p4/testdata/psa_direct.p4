/* PSA DirectCounter and DirectMeter change only when an action of their
 * table calls count() or execute() (psa_direct.stf; the counters are read
 * by stf's TestPSADirectCountsAtCalls). The packet: Ethernet, then op and
 * the colour the meter gave (RED 0, GREEN 1, YELLOW 2; 99 not executed).
 * Table tc (by source MAC) counts when op is 3 and twice when op is 4;
 * table tm (by destination MAC) executes its meter when op is 3. */
#include <core.p4>
#include <psa.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header probe_t { bit<8> op; bit<8> color; }
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
    DirectCounter<bit<32>>(PSA_CounterType_t.PACKETS_AND_BYTES) dc;
    DirectMeter(PSA_MeterType_t.PACKETS) dm;

    action maybe_count() {
        if (hdr.probe.op == 3) { dc.count(); }
        if (hdr.probe.op == 4) { dc.count(); dc.count(); }
    }
    action maybe_meter() {
        if (hdr.probe.op == 3) { hdr.probe.color = code(dm.execute()); }
    }
    table tc {
        key = { hdr.eth.src : exact; }
        actions = { maybe_count; NoAction; }
        default_action = maybe_count();
        psa_direct_counter = dc;
    }
    table tm {
        key = { hdr.eth.dst : exact; }
        actions = { maybe_meter; NoAction; }
        default_action = NoAction();
        psa_direct_meter = dm;
    }

    apply {
        tc.apply();
        tm.apply();
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
