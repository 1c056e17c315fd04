/* Packet replication: multicast groups, I2E/E2E clones with sessions and
 * field lists, resubmit and recirculate (bounded). The rep header records
 * what egress saw. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header rep_t {
    bit<8>  op;
    bit<8>  inst;   /* egress: instance_type */
    bit<16> rid;    /* egress: egress_rid */
    bit<8>  pass;   /* passes through ingress (resubmit, recirculate) */
    bit<8>  kept;   /* a preserved metadata field */
    bit<16> port;   /* egress: egress_port */
}

struct headers_t {
    ethernet_t eth;
    rep_t      rep;
}

struct metadata_t {
    @field_list(1)
    bit<8> kept;
    @field_list(2, 3)
    bit<8> passes;
    bit<8> scratch;
}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x88b5: rep;
            default: accept;
        }
    }
    state rep {
        packet.extract(hdr.rep);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        meta.passes = meta.passes + 1;
        hdr.rep.pass = meta.passes;
        sm.egress_spec = 1;
        if (hdr.rep.op == 2) {
            sm.mcast_grp = 5;
        } else if (hdr.rep.op == 3) {
            meta.kept = 0x77;
            meta.scratch = 0x55;
            clone_preserving_field_list(CloneType.I2E, 10, 1);
        } else if (hdr.rep.op == 4) {
            clone(CloneType.I2E, 99);
        } else if (hdr.rep.op == 5) {
            sm.mcast_grp = 77;
        } else if (hdr.rep.op == 6) {
            if (sm.instance_type == 0) {
                resubmit_preserving_field_list(2);
            }
        } else if (hdr.rep.op == 10) {
            clone(CloneType.I2E, 12);
            mark_to_drop(sm);
        } else if (hdr.rep.op == 11) {
            meta.kept = 0x66;
            clone3(CloneType.I2E, 10, { meta.kept });
        } else if (hdr.rep.op == 12) {
            resubmit_preserving_field_list(2);
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.rep.isValid()) {
            hdr.rep.inst = sm.instance_type[7:0];
            hdr.rep.rid = sm.egress_rid;
            hdr.rep.port = (bit<16>)sm.egress_port;
            hdr.rep.kept = meta.kept;
            if (hdr.rep.op == 7) {
                recirculate_preserving_field_list(3);
            } else if (hdr.rep.op == 8 && meta.passes < 3) {
                recirculate_preserving_field_list(3);
            } else if (hdr.rep.op == 9 && sm.instance_type == 0) {
                clone(CloneType.E2E, 11);
            } else if (hdr.rep.op == 13 && sm.instance_type == 0) {
                clone(CloneType.E2E, 12); /* to a multicast session */
            }
            if (sm.egress_port == 2 && hdr.rep.op == 2) {
                mark_to_drop(sm);   /* egress drops one replica */
            }
        }
    }
}

control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.rep);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
