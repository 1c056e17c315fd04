/* Constructor parameters of parser type (P4-16 14.1): Pair applies the
 * parser it is given twice; P instantiates it twice, with Tag (extracts a
 * tag) and with Strict (extracts one and rejects a kind other than 1), and
 * each instance applies its own. Guard takes a parser of Pair's type and
 * is given the Pair instance holding Strict: a parser passed this way may
 * itself have been given one. */
#include <core.p4>
#include <v1model.p4>

error { BadKind }

header eth_t { bit<48> d; bit<48> s; bit<16> t; }
header tag_t { bit<8> kind; bit<8> val; }
header res_t { bit<8> sum; bit<8> flags; }
struct H { eth_t eth; tag_t a; tag_t b; res_t res; }
struct M { bit<8> guarded; }

parser tag_p(packet_in p, out tag_t t);
parser pair_p(packet_in p, inout H h);

parser Pair(packet_in p, inout H h)(tag_p q) {
    state start { q.apply(p, h.a); q.apply(p, h.b); transition accept; }
}
parser Tag(packet_in p, out tag_t t) {
    state start { p.extract(t); transition accept; }
}
parser Strict(packet_in p, out tag_t t) {
    state start { p.extract(t); verify(t.kind == 1, error.BadKind); transition accept; }
}
/* applies inner unless the next byte is 0 */
parser Guard(packet_in p, inout H h, out bit<8> ran)(pair_p inner) {
    state start {
        ran = 0;
        transition select(p.lookahead<bit<8>>()) { 0: accept; default: run; }
    }
    state run { inner.apply(p, h); ran = 1; transition accept; }
}

parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    Tag() tag;
    Strict() strict;
    Pair(tag) loose;
    Pair(strict) checked;
    Guard(checked) guard;
    state start {
        p.extract(h.eth);
        transition select(h.eth.t) { 0x0101: l; 0x0102: c; 0x0103: g; default: accept; }
    }
    state l { loose.apply(p, h); transition accept; }
    state c { checked.apply(p, h); transition accept; }
    state g { guard.apply(p, h, m.guarded); transition accept; }
}

control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.res.setValid();
        h.res.sum = 0;
        if (h.a.isValid() && h.b.isValid()) {
            h.res.sum = h.a.val + h.b.val;
        }
        h.res.flags = m.guarded;
        if (sm.parser_error == error.BadKind) {
            h.res.flags = h.res.flags | 0x80;
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
