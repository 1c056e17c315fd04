/* v1model as p4c declares it since V1MODEL_VERSION 20200408: register<T, I>
 * and meter<I> with typed indices, PortId_t ports, the meter colour names. */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> idx; bit<32> v; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { p.extract(h.h); transition accept; } }
control V(inout H h, inout M m) { apply {} }
control I(inout H h, inout M m, inout standard_metadata_t s) {
    register<bit<32>, bit<8>>(256) r;
    meter<bit<8>>(16, MeterType.packets) mt;
    apply {
        bit<32> old;
        r.read(old, h.h.idx);
        r.write(h.h.idx, h.h.v);
        h.h.v = old;
        bit<2> c;
        mt.execute_meter(h.h.idx, c);
        if (c == V1MODEL_METER_COLOR_GREEN) { h.h.a = 1; }
        PortId_t p = 1;
        s.egress_spec = p;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t s) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
