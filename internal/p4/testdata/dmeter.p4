/* dmeter: direct meters. An exact table with a packets direct meter, a
 * ternary table with a bytes direct meter and an LPM table with a packets
 * direct meter, read in the actions; the colours are written into the
 * packet (GREEN 0, YELLOW 1, RED 2). */
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
    bit<8> lpm;
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
    direct_meter<bit<8>>(MeterType.packets) by_dst;
    direct_meter<bit<8>>(MeterType.bytes) by_src;
    direct_meter<bit<8>>(MeterType.packets) by_prefix;

    action mark_pkts(bit<9> port) {
        by_dst.read(hdr.c.pkts);
        sm.egress_spec = port;
    }
    action mark_bytes() {
        by_src.read(hdr.c.bytes);
    }
    action mark_lpm() {
        by_prefix.read(hdr.c.lpm);
    }
    table prefix {
        key = { hdr.eth.etherType : lpm; }
        actions = { mark_lpm; NoAction; }
        default_action = NoAction();
        meters = by_prefix;
    }
    table dst {
        key = { hdr.eth.dstAddr : exact; }
        actions = { mark_pkts; NoAction; }
        default_action = NoAction();
        meters = by_dst;
    }
    table src {
        key = { hdr.eth.srcAddr : ternary; }
        actions = { mark_bytes; NoAction; }
        default_action = NoAction();
        meters = by_src;
        size = 16;
    }
    apply {
        sm.egress_spec = 2;
        hdr.c.pkts = 0xff;
        hdr.c.bytes = 0xff;
        hdr.c.lpm = 0xff;
        dst.apply();
        src.apply();
        prefix.apply();
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
