/* == and != on structured values, and what p4c's programs write around
 * them: varbits (the length and the first length bytes; stale bytes past
 * the length do not count), headers (two invalid headers are equal), header
 * stacks, structs; a varbit local; a program-wide register shared by
 * ingress and egress; const entries with p4c's @priority annotation (the
 * smaller number wins); a key on a stack element (STF spells it p$1.b).
 * The comparison results go to the last byte of the source MAC, the table
 * marks and the packet count to the destination MAC. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tlv_t {
    bit<8>     len;
    varbit<64> value;
}

header pair_t {
    bit<8> a;
    bit<8> b;
}

struct ab_t {
    bit<8> a;
    bit<8> b;
}

struct headers_t {
    ethernet_t eth;
    tlv_t      t1;
    tlv_t      t2;
    pair_t[2]  p;
}

struct metadata_t {}

// program-wide: ingress counts the packets, egress reports the count
register<bit<8>>(1) seen;

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x88b5: tlvs;
            0x88b6: pairs;
            default: accept;
        }
    }
    state tlvs {
        packet.extract(hdr.t1, (bit<32>)packet.lookahead<bit<8>>() * 8);
        packet.extract(hdr.t2, (bit<32>)packet.lookahead<bit<8>>() * 8);
        transition pairs;
    }
    state pairs {
        packet.extract(hdr.p.next);
        packet.extract(hdr.p.next);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply {} }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action mark(bit<8> m) { hdr.eth.dstAddr[15:8] = m; }
    action mark2(bit<8> m) { hdr.eth.dstAddr[23:16] = m; }
    table by_pair {
        key = { hdr.p[0].a : ternary; }
        actions = { mark; NoAction; }
        const entries = {
            0x10 &&& 0xf0 : mark(1) @priority(3);
            0x10 &&& 0xfe : mark(2);               // ranks by position: 2
            0x11 &&& 0xff : mark(3) @priority(1);
        }
        default_action = NoAction();
    }
    table by_elem {
        key = { hdr.p[1].b : ternary; }
        actions = { mark2; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        bit<8> r = 0;
        if (hdr.t1.isValid() && hdr.t1.value == hdr.t2.value) {
            r = r | 1;
        }
        if (hdr.p[0] == hdr.p[1]) {
            r = r | 2;
        }
        pair_t[2] copy = hdr.p;
        if (copy == hdr.p) {
            r = r | 4;
        }
        copy[1].b = copy[1].b + 1;
        if (copy != hdr.p) {
            r = r | 8;
        }
        if (hdr.p[1].isValid()) {
            ab_t x = { hdr.p[0].a, hdr.p[0].b };
            ab_t y = { hdr.p[1].a, hdr.p[1].b };
            if (x == y) {
                r = r | 16;
            }
            by_pair.apply();
            by_elem.apply();
        }
        // swap the values through a varbit local
        varbit<64> v = hdr.t1.value;
        hdr.t1.value = hdr.t2.value;
        hdr.t2.value = v;
        hdr.eth.srcAddr[7:0] = r;
        bit<8> n;
        seen.read(n, 0);
        seen.write(0, n + 1);
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> n;
        seen.read(n, 0);
        hdr.eth.dstAddr[7:0] = n;
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply {} }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.t1);
        packet.emit(hdr.t2);
        packet.emit(hdr.p);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
