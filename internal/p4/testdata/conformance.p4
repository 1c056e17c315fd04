/* Regressions found by make p4-conformance (p4c's samples), one small case
 * per bug, each named in a comment:
 * - implicit: a table without default_action whose action list lacks
 *   NoAction misses into p4c's implicit NoAction (the generated C called
 *   an action it never defined: the load failed; gauntlet_exit_combination_*).
 * - literals: an integer literal takes its type from the operand beside it,
 *   not from a cast around the expression (checksum1, gauntlet_mux_typecasting).
 * - nested slices are l-values (gauntlet_nested_slice).
 * - errors: a key of type error (issue1062-1).
 * - enums: a serializable enum key with a mask of bits (table-entries-ser-enum).
 * - saturating arithmetic on int<N> (saturated).
 * - locals: a control's variables declared outside apply get their
 *   initial values (gauntlet_int_slice, issue2614).
 * - shifts: int<N> >> an amount of N or more fills with the sign (arith5).
 * - lpm: const entries of an lpm table match longest prefix first, not in
 *   order (table-entries-lpm). */
#include <core.p4>
#include <v1model.p4>

enum bit<16> Kind { A = 0x0a01, B = 0x0b02 }

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header byte_t { bit<8> v; }
header calc_t { bit<8> op; int<8> x; int<8> y; bit<8> r1; bit<16> r2; bit<8> r3; bit<8> r4; int<8> r5; }
struct H { ethernet_t eth; byte_t b; calc_t c; }
struct M { error err; Kind kind; }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.b);
        transition select(hdr.eth.etherType) {
            0x88b6: calc;
            default: accept;
        }
    }
    state calc { pkt.extract(hdr.c); transition accept; }
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    bit<8> seed = 8w0x42;
    action mark_and_exit() { hdr.eth.srcAddr = 2; exit; }
    table implicit {
        key = { hdr.b.v : exact; }
        actions = { mark_and_exit; }
    }
    action set_b(bit<8> v) { hdr.b.v = v; }
    table errors {
        key = { m.err : exact; }
        actions = { set_b; NoAction; }
        default_action = NoAction();
    }
    table enums {
        key = { m.kind : ternary; }
        actions = { set_b; NoAction; }
        const entries = {
            Kind.A &&& 0xff00 : set_b(0xa0);
        }
        default_action = NoAction();
    }
    table lpm {
        key = { hdr.b.v : lpm; }
        actions = { set_b; NoAction; }
        const entries = {
            0x11 &&& 0xf0 : set_b(0xa1);
            0x12 : set_b(0xa2);
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.eth.etherType == 0x1100) {
            lpm.apply();
            return;
        }
        if (hdr.c.isValid()) {
            hdr.c.r4 = seed;
            hdr.c.r5 = hdr.c.x >> (bit<8>)hdr.c.y;
            if (hdr.c.op == 1) {
                hdr.c.x = hdr.c.x |+| hdr.c.y;
            } else if (hdr.c.op == 2) {
                hdr.c.x = hdr.c.x |-| hdr.c.y;
            }
            // literals: 4 is a bit<4> beside (bit<4>)..., not a bit<8>
            hdr.c.r1 = (bit<8>)(4 * (bit<4>)hdr.c.op - 1);
            hdr.c.r2 = (bit<16>)-((hdr.c.op == 1) ? 2 : 3w1);
            bit<8> n = 0xff;
            n[7:4][2:1] = 2w0;
            hdr.c.r3 = n;
            return;
        }
        if (hdr.eth.etherType == 0x0a01 || hdr.eth.etherType == 0x0aff) {
            m.kind = (Kind)hdr.eth.etherType;
            enums.apply();
            return;
        }
        m.err = error.NoError;
        if (hdr.b.v == 0xee) {
            m.err = error.NoMatch;
        }
        if (hdr.eth.etherType == 0xeeee) {
            errors.apply();
            return;
        }
        if (!implicit.apply().hit) {
            hdr.b.v = hdr.b.v + 1;
        }
    }
}

control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), Ig(), E(), C(), D()) main;
