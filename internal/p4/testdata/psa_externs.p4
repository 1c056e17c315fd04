/* PSA externs and architecture features, checked packet by packet
 * (psa_externs.stf). The packet: Ethernet, then a probe header the
 * program fills:
 *   seq   Register<bit<16>, bit<8>>: the count of earlier packets from the
 *         ingress port (read, then write + 1)
 *   hash  Hash CRC16 of the 12-bit field nib (right-aligned, as BMv2), or
 *         with op 1 get_hash(base 10, data, max 5)
 *   csum  InternetChecksum: add {a, b}, subtract {b}, get; op 2: get_state
 *         after set_state(0x1234)
 *   rnd   Random(7, 7): 7
 *   color Meter (index: the ingress port), colour-blind, or colour-aware
 *         from pre (op 3) as PSA_MeterColor_t (RED 0, GREEN 1, YELLOW 2)
 *   path  packet_path and egress_port as egress sees them, through a
 *         directly applied control
 *   br    bridged metadata: the ingress port + 0x40, from the ingress
 *         deparser (normal_meta) to the egress parser
 * A Counter counts packets and bytes per ingress port.
 * The ingress deparser's emits are in a shared sub-control. */
#include <core.p4>
#include <psa.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header probe_t {
    bit<8>  op;
    bit<4>  pad;
    bit<12> nib;
    bit<16> a;
    bit<16> b;
    bit<8>  pre;
    bit<16> seq;
    bit<16> hash;
    bit<16> csum;
    bit<16> rnd;
    bit<8>  color;
    bit<8>  path;
    bit<32> eport;
    bit<8>  br;
}
struct headers { ethernet_t eth; probe_t probe; }
struct meta_t { bit<8> port; }
struct empty_t { }
struct bridge_t { bit<8> tag; }

parser IgParser(packet_in pkt, out headers hdr, inout meta_t meta,
                in psa_ingress_parser_input_metadata_t istd,
                in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control Ig(inout headers hdr, inout meta_t meta,
           in psa_ingress_input_metadata_t istd,
           inout psa_ingress_output_metadata_t ostd) {
    Register<bit<16>, bit<8>>(8) seqs;
    Hash<bit<16>>(PSA_HashAlgorithm_t.CRC16) crc;
    InternetChecksum() ck;
    Random<bit<16>>(7, 7) seven;
    Meter<bit<8>>(8, PSA_MeterType_t.PACKETS) m;
    Counter<bit<64>, bit<8>>(8, PSA_CounterType_t.PACKETS_AND_BYTES) rx;

    apply {
        bit<8> port = (bit<8>)(PortIdUint_t)istd.ingress_port;
        meta.port = port;
        rx.count(port);
        hdr.probe.seq = seqs.read(port);
        seqs.write(port, hdr.probe.seq + 1);
        if (hdr.probe.op == 1) {
            hdr.probe.hash = crc.get_hash(16w10, { hdr.probe.nib }, 16w5);
        } else {
            hdr.probe.hash = crc.get_hash({ hdr.probe.nib });
        }
        if (hdr.probe.op == 2) {
            ck.set_state(0x1234);
            hdr.probe.csum = ck.get_state();
        } else {
            ck.clear();
            ck.add({ hdr.probe.a, hdr.probe.b });
            ck.subtract({ hdr.probe.b });
            hdr.probe.csum = ck.get();
        }
        hdr.probe.rnd = seven.read();
        PSA_MeterColor_t c;
        if (hdr.probe.op == 3) {
            PSA_MeterColor_t pre = PSA_MeterColor_t.GREEN;
            if (hdr.probe.pre == 0) { pre = PSA_MeterColor_t.RED; }
            if (hdr.probe.pre == 2) { pre = PSA_MeterColor_t.YELLOW; }
            c = m.execute(port, pre);
        } else {
            c = m.execute(port);
        }
        if (c == PSA_MeterColor_t.RED) { hdr.probe.color = 0; }
        else if (c == PSA_MeterColor_t.GREEN) { hdr.probe.color = 1; }
        else { hdr.probe.color = 2; }
        send_to_port(ostd, (PortId_t)1);
    }
}

control Emit(packet_out pkt, inout headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.probe);
    }
}

control IgDeparser(packet_out pkt, out empty_t clone_i2e_meta,
                   out empty_t resubmit_meta, out bridge_t normal_meta,
                   inout headers hdr, in meta_t meta,
                   in psa_ingress_output_metadata_t istd) {
    Emit() e;
    apply {
        normal_meta.tag = meta.port + 0x40;
        e.apply(pkt, hdr);
    }
}

parser EgParser(packet_in pkt, out headers hdr, inout meta_t meta,
                in psa_egress_parser_input_metadata_t istd,
                in bridge_t normal_meta, in empty_t clone_i2e_meta,
                in empty_t clone_e2e_meta) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.probe);
        hdr.probe.br = normal_meta.tag;
        transition accept;
    }
}

control PathCode(in PSA_PacketPath_t p, out bit<8> code) {
    apply {
        code = 9;
        if (p == PSA_PacketPath_t.NORMAL_UNICAST) { code = 2; }
    }
}

control Eg(inout headers hdr, inout meta_t meta,
           in psa_egress_input_metadata_t istd,
           inout psa_egress_output_metadata_t ostd) {
    apply {
        PathCode.apply(istd.packet_path, hdr.probe.path);
        hdr.probe.eport = (PortIdUint_t)istd.egress_port;
    }
}

control EgDeparser(packet_out pkt, out empty_t clone_e2e_meta,
                   out empty_t recirculate_meta, inout headers hdr,
                   in meta_t meta, in psa_egress_output_metadata_t istd,
                   in psa_egress_deparser_input_metadata_t edstd) {
    Emit() e;
    apply { e.apply(pkt, hdr); }
}

IngressPipeline(IgParser(), Ig(), IgDeparser()) ip;
EgressPipeline(EgParser(), Eg(), EgDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
