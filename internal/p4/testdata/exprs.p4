/* Semantics of expressions: wrapping and saturating arithmetic, shifts
 * (logical and arithmetic), negation, slices at odd bit offsets, ++, casts,
 * signed and unsigned comparisons, ?:, / and %, slice assignment. Results
 * are written to a header the deparser inserts (the packet grows). */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header in_t { bit<8> a; bit<8> b; bit<16> c; int<8> s; bit<8> n; }
header out_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> sat_add; bit<8> sat_sub;
    bit<8> shl; bit<8> shr; bit<8> sshr; bit<8> neg; bit<8> inv;
    bit<3> slice; bit<5> cat; bit<16> cw; bit<8> cmp; bit<8> tern;
    bit<16> div; bit<16> mod; bit<8> sl;
}
struct H { eth_t eth; in_t i; out_t o; }
struct M { }

parser P(packet_in pkt, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); pkt.extract(h.i); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        bit<8> a = h.i.a;
        bit<8> b = h.i.b;
        h.o.setValid();
        h.o.add = a + b;
        h.o.sub = a - b;
        h.o.mul = a * b;
        h.o.sat_add = a |+| b;
        h.o.sat_sub = b |-| a;
        h.o.shl = a << h.i.n;
        h.o.shr = a >> h.i.n;
        h.o.sshr = (bit<8>)(h.i.s >> 1);
        h.o.neg = -a;
        h.o.inv = ~a;
        h.o.slice = h.i.c[6:4];
        h.o.cat = a[1:0] ++ b[2:0];
        h.o.cw = (bit<16>)a;
        h.o.cmp = 0;
        if (h.i.s < 0) { h.o.cmp[0:0] = 1; }
        if (a > b) { h.o.cmp[1:1] = 1; }
        if (a == 200) { h.o.cmp[2:2] = 1; }
        if (h.i.s > -7) { h.o.cmp[3:3] = 1; }
        if (h.i.s >= 0) { h.o.cmp[4:4] = 1; }
        h.o.tern = a > b ? a : b;
        h.o.div = h.i.c / 7;
        h.o.mod = h.i.c % 7;
        h.o.sl = 0xff;
        h.o.sl[5:2] = 0;
        h.o.sl[1:0] += 2; /* 3 + 2 wraps to 1 in two bits */
        sm.egress_spec = 1;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pkt, in H h) { apply { pkt.emit(h.eth); pkt.emit(h.i); pkt.emit(h.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
