// Extern instances passed to a control's constructor (P4-16 14.1): the
// sub-control counts and records into the instances its parent declares.
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct H { eth_t eth; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control Count(inout H h, inout standard_metadata_t sm)(counter seen, register<bit<16>> last, bit<9> port) {
    apply {
        seen.count((bit<32>)h.eth.t[1:0]);
        last.write(0, h.eth.t);
        sm.egress_spec = port;
    }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) types;
    register<bit<16>>(1) lastType;
    Count(types, lastType, 2) cnt;
    apply { cnt.apply(h, sm); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
