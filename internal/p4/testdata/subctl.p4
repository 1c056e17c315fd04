/* A control instantiated inside another: copy-in/copy-out of arguments,
 * exit from the sub-control, instance-path names (Ig.rw.dmac). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header byte_t { bit<8> v; }
struct H { ethernet_t eth; byte_t b; }
struct M { }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.b); transition accept; }
}

control Rewrite(inout ethernet_t e, in bit<48> smac, out bit<8> hits) {
    counter(4, CounterType.packets) seen;
    action set(bit<48> dmac) { e.dstAddr = dmac; hits = 1; }
    table dmac {
        key = { e.dstAddr : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply {
        hits = 0;
        e.srcAddr = smac;
        seen.count(0);
        if (e.etherType == 0xdead) {
            exit;
        }
        dmac.apply();
    }
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Rewrite() rw;
    apply {
        bit<8> h = 7;
        sm.egress_spec = 1;
        rw.apply(hdr.eth, 48w0xaa, h);
        hdr.b.v = h;
        if (h == 1) {
            sm.egress_spec = 2;
        }
    }
}

control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), Ig(), E(), C(), D()) main;
