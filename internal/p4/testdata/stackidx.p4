/* Header stacks indexed at run time (bounds-checked: an index out of range
 * reads an undefined value and writes nothing; extract rejects with
 * error.StackOutOfBounds), a stack variable, and a stack of header unions
 * parsed with hs.next.member, shifted and emitted. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ctl_t { bit<8> idx; bit<8> val; bit<8> err; bit<8> n; }
header e_t { bit<8> v; }
header one_t { bit<8> tag; bit<8> x; }
header two_t { bit<8> tag; bit<16> y; }
header_union u_t { one_t one; two_t two; }
struct H { ethernet_t eth; ctl_t ctl; e_t[4] e; u_t[3] u; }
struct M { bit<8> i; }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ctl);
        transition select(hdr.eth.etherType) {
            0x88b5: elems;
            0x88b6: unions;
            0x88b7: elems;
            default: accept;
        }
    }
    /* ctl.n elements, each into e[i] for a run-time i */
    state elems {
        transition select(m.i == hdr.ctl.n) {
            true: accept;
            false: elem;
        }
    }
    state elem {
        pkt.extract(hdr.e[m.i]);
        m.i = m.i + 1;
        transition elems;
    }
    state unions {
        transition select(pkt.lookahead<bit<8>>()) {
            1: one;
            2: two;
            default: accept;
        }
    }
    state one { pkt.extract(hdr.u.next.one); transition unions; }
    state two { pkt.extract(hdr.u.next.two); transition unions; }
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.ctl.err = 1;
            return;
        }
        if (hdr.eth.etherType == 0x88b5) {
            /* write then read e[idx]; out of range writes nothing */
            hdr.e[hdr.ctl.idx].v = hdr.ctl.val;
            hdr.ctl.val = hdr.e[hdr.ctl.idx & 3].v;
        } else if (hdr.eth.etherType == 0x88b7) {
            /* a stack variable: starts invalid, assigned whole */
            e_t[4] tmp;
            hdr.ctl.err = tmp[0].isValid() ? 8w1 : 8w0;
            tmp = hdr.e;
            tmp[hdr.ctl.idx].v = 0x42;
            tmp.pop_front(1);
            hdr.e = tmp;
        } else if (hdr.eth.etherType == 0x88b6) {
            /* u[0] moves to u[1]: the union's members move with it */
            hdr.u.push_front(1);
            hdr.ctl.n = (hdr.u[1].two.isValid() ? 8w0x80 : 8w0) | (hdr.u[1].one.isValid() ? 8w1 : 8w0);
            hdr.u[0].one.setValid();
            hdr.u[0].one.tag = 9;
            hdr.u[0].one.x = hdr.ctl.idx;
            hdr.u[hdr.ctl.idx].two.setInvalid();
        }
    }
}

control Eg(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), Ig(), Eg(), C(), D()) main;
