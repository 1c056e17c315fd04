/* Masks on keys wider than 64 bits in const entries: a 128-bit ternary
 * key whose masks cut across the 64-bit halves, and an lpm key given as
 * value &&& mask. */
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
header w_t { bit<128> a; bit<8> tag; }
struct H { eth_t eth; w_t w; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); p.extract(h.w); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action tag(bit<8> v) { h.w.tag = v; }
    table tern {
        key = { h.w.a : ternary; }
        actions = { tag; NoAction; }
        default_action = NoAction();
        const entries = {
            0x0005_1111_2222_3333_4444_5555_0000_7777 &&& 0xffff_ffff_ffff_ffff_ffff_ffff_0000_ffff : tag(1);
            0x2001_0db8_0000_0000_0000_0000_0000_0000 &&& 0xffff_ffff_0000_0000_0000_0000_0000_0000 : tag(2);
        }
    }
    table pfx {
        key = { h.w.a : lpm; }
        actions = { tag; NoAction; }
        default_action = NoAction();
        const entries = {
            0x0004_1111_2222_3333_4444_5555_6666_0000 &&& 0xffff_ffff_ffff_ffff_ffff_ffff_ffff_0000 : tag(3);
        }
    }
    apply {
        tern.apply();
        pfx.apply();
        sm.egress_spec = 1;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
