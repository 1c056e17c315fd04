/* atomic: @atomic read-modify-write of registers, made atomic with a
 * bpf_spin_lock per index. Per ingress port: a packet count and the sum
 * of the first payload byte (two registers at one index), returned in the
 * packet. The block calls an action and a function, inlined under the lock. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header val_t {
    bit<8>  v;
    bit<32> count;
    bit<32> sum;
}

struct headers_t {
    ethernet_t eth;
    val_t      val;
}

struct metadata_t {
    bit<32> count;
    bit<32> sum;
}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        packet.extract(hdr.val);
        transition accept;
    }
}

bit<32> plus(in bit<32> a, in bit<8> b) {
    return a + (bit<32>)b;
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) counts;
    register<bit<32>>(8) sums;

    action bump(inout bit<32> c) { c = c + 1; }

    action account() {
        @atomic {
            counts.read(meta.count, (bit<32>)sm.ingress_port);
            bump(meta.count);
            counts.write((bit<32>)sm.ingress_port, meta.count);
            sums.read(meta.sum, (bit<32>)sm.ingress_port);
            if (hdr.val.v != 0) {
                meta.sum = plus(meta.sum, hdr.val.v);
                sums.write((bit<32>)sm.ingress_port, meta.sum);
            }
        }
    }

    apply {
        account();
        @atomic {
            // no register: trivially atomic (per-packet state is per-CPU)
            hdr.val.count = meta.count;
            hdr.val.sum = meta.sum;
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.val);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
