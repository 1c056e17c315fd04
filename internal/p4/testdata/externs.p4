/* externs: random, truncate, assert/assume. op 1 writes random(10..12)
 * into r, op 2 truncates the packet to 16 bytes, op 3 asserts r == 0
 * (compiled out unless built with --debug), op 4 assumes it. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header op_t {
    bit<8> op;
    bit<8> r;
    bit<16> wide;
}

struct headers_t {
    ethernet_t eth;
    op_t       o;
}

struct metadata_t {}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        packet.extract(hdr.o);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.o.op == 1) {
            random(hdr.o.r, 8w10, 8w12);
            random(hdr.o.wide, 16w0, 16w0xffff);
        } else if (hdr.o.op == 2) {
            truncate(16);
        } else if (hdr.o.op == 3) {
            assert(hdr.o.r == 0);
        } else if (hdr.o.op == 4) {
            assume(hdr.o.r == 0);
        } else if (hdr.o.op == 5) {
            random(hdr.o.r, 8w7, 8w7);
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.o);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
