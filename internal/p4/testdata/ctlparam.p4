/* Constructor parameters of control type (P4-16 14.1): Twice and Chain
 * take control instances of type step_t and apply them; Add (a table:
 * state of its own) is declared after Twice, which applies it, and is
 * passed to both Twice and Chain, which apply the same instance. */
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply { } }

control step_t(inout bit<16> x, in bit<48> key);

control Twice(inout bit<16> x, in bit<48> key)(step_t s) {
    apply { s.apply(x, key); s.apply(x, key); }
}
control Chain(inout bit<16> x, in bit<48> key)(step_t first, step_t second) {
    apply { first.apply(x, key); second.apply(x, key); }
}
control Add(inout bit<16> x, in bit<48> key) {
    action add(bit<16> n) { x = x + n; }
    table by_key { key = { key : exact; } actions = { add; NoAction; } default_action = NoAction(); }
    apply { by_key.apply(); }
}
control Shl(inout bit<16> x, in bit<48> key) {
    apply { x = x << 1; }
}

control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Add() a;
    Shl() sh;
    Twice(a) t;
    Chain(sh, a) ch;
    apply {
        t.apply(h.eth.t, h.eth.d);
        ch.apply(h.eth.t, h.eth.d);
        sm.egress_spec = 1;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
