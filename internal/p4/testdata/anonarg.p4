/* Instances constructed in a constructor argument (P4-16 10.3.1): each
 * Step(Add(k)) builds an anonymous Add instance of its own, so the two
 * give 1 and 2 (not one shared instance); Twice(Shl()) in the ingress
 * is an anonymous control instance. */
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { }

parser add_t(packet_in p, inout H h);
parser Add(packet_in p, inout H h)(bit<16> k) {
    state start { h.eth.t = h.eth.t + k; transition accept; }
}
parser Step(packet_in p, inout H h)(add_t a) {
    state start { a.apply(p, h); transition accept; }
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    Step(Add(16w0x0100)) one;
    Step(Add(16w0x0200)) two;
    state start { p.extract(h.eth); one.apply(p, h); two.apply(p, h); transition accept; }
}
control V(inout H h, inout M m) { apply { } }

control step_t(inout bit<16> x);
control Shl(inout bit<16> x) { apply { x = x << 1; } }
control Twice(inout bit<16> x)(step_t s) { apply { s.apply(x); s.apply(x); } }

control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Twice(Shl()) t;
    apply { t.apply(h.eth.t); sm.egress_spec = 1; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
