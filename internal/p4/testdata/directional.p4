/* Directional parameters (P4-16 6.8): copy-in/copy-out for actions and
 * functions, a table's action list binding an action's inout parameter,
 * out headers invalid until written, copy-out on exit, functions returning
 * headers; short-circuit && and ?: around table applies and calls, and
 * left-to-right evaluation of operands. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header data_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct H { ethernet_t eth; data_t d; ethernet_t tag; }
struct M { bit<8> acc; bit<8> calls; }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d); transition accept; }
}

/* returns a header; sum is an out parameter */
data_t swapped(in data_t x, out bit<8> sum) {
    data_t r = x;
    r.a = x.b;
    r.b = x.a;
    sum = x.a + x.b;
    return r;
}

bit<8> bump(inout bit<8> n) {
    n = n + 1;
    return n;
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action add(inout bit<8> acc, bit<8> v) { acc = acc + v; }
    action mark(out ethernet_t e) { e.setValid(); e.dstAddr = 0xee; e.srcAddr = 0xff; e.etherType = 0x88b5; }
    action clear(out data_t x) { }
    action stop(inout bit<8> x) { x = 0x55; exit; }
    table t_add {
        key = { hdr.eth.etherType : exact; }
        actions = { add(hdr.d.c); }
        default_action = add(hdr.d.c, 0x10);
    }
    table t_hit {
        key = { hdr.d.a : exact; }
        actions = { NoAction; }
    }
    table t_count {
        key = { hdr.d.a : exact; }
        actions = { add(m.calls); }
        default_action = add(m.calls, 1);
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.eth.etherType == 0x88b7) {
            stop(hdr.d.b);
        }
        if (hdr.eth.etherType == 0x88b8) {
            mark(hdr.tag);
            return;
        }
        if (hdr.eth.etherType == 0x88b9) {
            clear(hdr.d);
            return;
        }
        if (hdr.eth.etherType == 0x88ba) {
            hdr.d.c = hdr.d.a + bump(hdr.d.a);
            return;
        }
        if (hdr.eth.etherType == 0x88bb) {
            return; /* egress's test */
        }
        t_add.apply();
        /* t_count runs only when t_hit hits */
        if (t_hit.apply().hit && !t_count.apply().hit) {
            hdr.d.b = hdr.d.b | 0x80;
        }
        hdr.d = swapped(hdr.d, m.acc);
        hdr.d.d = (m.calls << 4) | m.acc;
    }
}

control Eg(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (hdr.eth.etherType == 0x88bb) {
            /* one branch runs: n ends at 1 */
            bit<8> n = 0;
            bit<8> r = hdr.d.a == 2 ? bump(n) : bump(n) + 0x20;
            hdr.d.c = r;
            hdr.d.d = n;
        }
    }
}

control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), Ig(), Eg(), C(), D()) main;
