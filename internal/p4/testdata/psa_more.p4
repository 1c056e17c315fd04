/* More PSA, checked packet by packet (psa_more.stf). The packet:
 * Ethernet, then a probe header the program fills:
 *   crc16  Checksum<bit<16>>(CRC16): update(a), then update(b), get
 *   crc32  Checksum<bit<32>>(CRC32): update({ a, b }), get; op 1 clears
 *          it after the update (get: the CRC of no data, 0)
 *   reg    Register<bit<16>, bit<8>>(4, 0x1234): cell idx before this
 *          packet, which then writes it + 1; every cell starts 0x1234
 *   len    packet_in.length() in the ingress parser, which rejects a
 *          packet longer than 100 bytes (error.TooLong; ingress drops it)
 * A Counter with a 128-bit index counts packets per source MAC (an index
 * of 2^32 or more is out of range, not its low bits).
 * Forwarding: table lb (an ActionSelector over the source MAC) with
 * psa_empty_group_action = fwd(3); its default action fwd(1). */
#include <core.p4>
#include <psa.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header probe_t {
    bit<8>  op;
    bit<8>  idx;
    bit<16> a;
    bit<16> b;
    bit<16> crc16;
    bit<32> crc32;
    bit<16> reg;
    bit<16> len;
}
struct headers { ethernet_t eth; probe_t probe; }
struct meta_t { bit<16> len; }
struct empty_t { }
error { TooLong }

parser IgParser(packet_in pkt, out headers hdr, inout meta_t meta,
                in psa_ingress_parser_input_metadata_t istd,
                in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        meta.len = (bit<16>)pkt.length();
        verify(pkt.length() <= 100, error.TooLong);
        pkt.extract(hdr.eth);
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control Ig(inout headers hdr, inout meta_t meta,
           in psa_ingress_input_metadata_t istd,
           inout psa_ingress_output_metadata_t ostd) {
    Checksum<bit<16>>(PSA_HashAlgorithm_t.CRC16) c16;
    Checksum<bit<32>>(PSA_HashAlgorithm_t.CRC32) c32;
    Register<bit<16>, bit<8>>(4, 16w0x1234) cells;
    ActionSelector(PSA_HashAlgorithm_t.CRC16, 32w16, 32w16) sel;
    Counter<bit<32>, bit<128>>(4, PSA_CounterType_t.PACKETS) bySrc;

    action fwd(PortId_t p) { send_to_port(ostd, p); }
    table lb {
        key = { hdr.eth.etherType : exact; hdr.eth.src : selector; }
        actions = { fwd; }
        default_action = fwd((PortId_t)1);
        psa_implementation = sel;
        psa_empty_group_action = fwd((PortId_t)3);
    }

    apply {
        if (istd.parser_error != error.NoError) {
            ingress_drop(ostd);
            exit;
        }
        bySrc.count((bit<80>)0 ++ hdr.eth.src);
        c16.update(hdr.probe.a);
        c16.update(hdr.probe.b);
        hdr.probe.crc16 = c16.get();
        c32.update({ hdr.probe.a, hdr.probe.b });
        if (hdr.probe.op == 1) {
            c32.clear();
        }
        hdr.probe.crc32 = c32.get();
        hdr.probe.reg = cells.read(hdr.probe.idx);
        cells.write(hdr.probe.idx, hdr.probe.reg + 1);
        hdr.probe.len = meta.len;
        lb.apply();
    }
}

control IgDeparser(packet_out pkt, out empty_t clone_i2e_meta,
                   out empty_t resubmit_meta, out empty_t normal_meta,
                   inout headers hdr, in meta_t meta,
                   in psa_ingress_output_metadata_t istd) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.probe); }
}

parser EgParser(packet_in pkt, out headers hdr, inout meta_t meta,
                in psa_egress_parser_input_metadata_t istd,
                in empty_t normal_meta, in empty_t clone_i2e_meta,
                in empty_t clone_e2e_meta) {
    state start { transition accept; }
}

control Eg(inout headers hdr, inout meta_t meta,
           in psa_egress_input_metadata_t istd,
           inout psa_egress_output_metadata_t ostd) {
    apply { }
}

control EgDeparser(packet_out pkt, out empty_t clone_e2e_meta,
                   out empty_t recirculate_meta, inout headers hdr,
                   in meta_t meta, in psa_egress_output_metadata_t istd,
                   in psa_egress_deparser_input_metadata_t edstd) {
    apply { }
}

IngressPipeline(IgParser(), Ig(), IgDeparser()) ip;
EgressPipeline(EgParser(), Eg(), EgDeparser()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
