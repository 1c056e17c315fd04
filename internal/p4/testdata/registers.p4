/* registers: read, write, read-modify-write, signed and bool cells,
 * out-of-range indices (read 0, write ignored), register access from an
 * action and from apply. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header reg_t {
    bit<8>  op;
    bit<8>  idx;
    bit<32> val;
}

struct headers_t {
    ethernet_t eth;
    reg_t      r;
}

struct metadata_t {}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x88b5: reg;
            default: accept;
        }
    }
    state reg {
        packet.extract(hdr.r);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) cells;
    @name("signed_cells") register<int<8>>(2) scells;
    register<bool>(1) flag;
    register<bit<16>>(64) per_port;

    action bump() {
        bit<32> v;
        cells.read(v, (bit<32>)hdr.r.idx);
        v = v + 1;
        cells.write((bit<32>)hdr.r.idx, v);
        hdr.r.val = v;
    }

    apply {
        bit<16> n;
        per_port.read(n, (bit<32>)sm.ingress_port);
        per_port.write((bit<32>)sm.ingress_port, n + 1);
        sm.egress_spec = 1;
        if (!hdr.r.isValid()) {
            return;
        }
        if (hdr.r.op == 1) {
            cells.write((bit<32>)hdr.r.idx, hdr.r.val);
        } else if (hdr.r.op == 2) {
            cells.read(hdr.r.val, (bit<32>)hdr.r.idx);
        } else if (hdr.r.op == 3) {
            bump();
        } else if (hdr.r.op == 4) {
            int<8> s;
            scells.read(s, (bit<32>)hdr.r.idx);
            s = s - (int<8>)hdr.r.val[7:0];
            scells.write((bit<32>)hdr.r.idx, s);
            hdr.r.val = (bit<32>)(bit<8>)s;
            if (s < 0) {
                flag.write(0, true);
            }
        } else if (hdr.r.op == 5) {
            bool f;
            flag.read(f, 0);
            hdr.r.val = f ? 32w1 : 32w0;
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.r);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
