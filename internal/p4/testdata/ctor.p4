/* Constructor parameters: of the main package's parser and ingress, of a
 * sub-parser instantiated twice with different values, of a sub-control
 * instantiated twice. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header res_t { bit<8> a; bit<8> b; bit<8> c; }
struct H { ethernet_t eth; res_t res; }
struct M { bit<8> x; }

parser Add(packet_in pkt, inout M m)(bit<8> n) {
    state start {
        m.x = m.x + n;
        transition accept;
    }
}

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm)(bit<8> base) {
    Add(1) one;
    Add(0x10) sixteen;
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.res);
        m.x = base;
        one.apply(pkt, m);
        sixteen.apply(pkt, m);
        transition accept;
    }
}

control Scale(inout bit<8> v)(bit<8> factor, bool enabled) {
    apply {
        if (enabled) {
            v = v * factor;
        }
    }
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm)(bit<9> port) {
    Scale(3, true) triple;
    Scale(3, true) again; /* stateless: the instances share Scale's code */
    apply {
        sm.egress_spec = port;
        hdr.res.a = m.x;
        triple.apply(hdr.res.b);
        again.apply(hdr.res.c);
    }
}

control Eg(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(0x20), V(), Ig(2), Eg(), C(), D()) main;
