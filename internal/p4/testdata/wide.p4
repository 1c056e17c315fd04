/* Arithmetic on values wider than 64 bits (bit<128>, as IPv6 addresses):
 * the calc header carries an operation, two operands and a shift; the
 * program writes the result to r and comparison flags to f:
 * bit 0 a < b, 1 a > b, 2 a <= b, 3 a >= b, 4 a == b, 5 the high half of
 * a is in table high64 (a key computed with &), 6 a != b. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header calc_t {
    bit<8>   op;
    bit<8>   sh;
    bit<128> a;
    bit<128> b;
    bit<128> r;
    bit<8>   f;
}

struct headers_t {
    ethernet_t eth;
    calc_t     calc;
}

struct metadata_t {}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        packet.extract(hdr.calc);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply {} }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action add_param(bit<128> v) {
        hdr.calc.r = hdr.calc.a + v;           // a wide action parameter
    }
    action seen() {
        hdr.calc.f = hdr.calc.f | 0x20;
    }
    table by_op {
        key = { hdr.calc.op : exact; }
        actions = { add_param; NoAction; }
        default_action = NoAction();
    }
    table high64 {
        key = { hdr.calc.a & 128w0xffffffffffffffff0000000000000000 : exact @name("a_high"); }
        actions = { seen; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        bit<128> a = hdr.calc.a;
        bit<128> b = hdr.calc.b;
        bit<8> op = hdr.calc.op;
        if (op == 1) {
            hdr.calc.r = a & b;
        } else if (op == 2) {
            hdr.calc.r = a | b;
        } else if (op == 3) {
            hdr.calc.r = a ^ b;
        } else if (op == 4) {
            hdr.calc.r = a + b;
        } else if (op == 5) {
            hdr.calc.r = a - b;
        } else if (op == 6) {
            hdr.calc.r = ~a;
        } else if (op == 7) {
            hdr.calc.r = -a;
        } else if (op == 8) {
            hdr.calc.r = a << hdr.calc.sh;
        } else if (op == 9) {
            hdr.calc.r = a >> hdr.calc.sh;
        } else if (op == 10) {
            hdr.calc.r = a[127:64] ++ b[63:0];
        } else if (op == 11) {
            hdr.calc.r = (bit<128>)a[31:0];
        } else if (op == 12) {
            hdr.calc.r = (bit<128>)a[95:0];
        } else if (op == 13) {
            hdr.calc.r = a + 1;
        } else if (op == 14) {
            hdr.calc.r = a;
            hdr.calc.r += b;
        } else if (op == 15) {
            hdr.calc.r = (bit<128>)a[99:4];
        } else if (op == 17) {
            hdr.calc.r = ((a & 0xffff) << 112) | (a >> 16);   // rotate by 16
        } else if (op == 18) {
            hdr.calc.r = (bit<128>)((bit<32>)a + 32w1);      // wide to narrow and back
        } else {
            by_op.apply();
        }
        bit<8> f = 0;
        if (a < b) { f = f | 1; }
        if (a > b) { f = f | 2; }
        if (a <= b) { f = f | 4; }
        if (a >= b) { f = f | 8; }
        if (a == b) { f = f | 16; }
        if (a != b) { f = f | 64; }
        hdr.calc.f = f;
        high64.apply();
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply {} }
control CC(inout headers_t hdr, inout metadata_t meta) { apply {} }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.calc);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
