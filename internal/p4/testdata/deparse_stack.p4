/* deparse_stack.p4: header stack elements extracted at constant indices,
 * written through an index (tags: no shifts, so only the index write makes
 * them dirty) or shifted (more: pop_front/push_front); the deparser writes
 * them whole (see deparse.p4). The mode is the first tag's v. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tag_t {
    bit<8>  v;
    bit<8>  w;
    bit<16> x;
}

struct headers {
    ethernet_t ethernet;
    tag_t[2]   tags;
    tag_t[2]   more;
}

struct metadata { }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88b5: parse_tags;
            default: accept;
        }
    }
    state parse_tags {
        pkt.extract(hdr.tags[0]);
        pkt.extract(hdr.tags[1]);
        pkt.extract(hdr.more[0]);
        pkt.extract(hdr.more[1]);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.tags[0].isValid()) {
            bit<8> mode = hdr.tags[0].v;
            if (mode == 1) {
                hdr.tags[1].w = 0x77;
            } else if (mode == 2) {
                hdr.more.pop_front(1);
            } else if (mode == 3) {
                hdr.more.push_front(1);
                hdr.more[0].setValid();
                hdr.more[0].v = 9;
                hdr.more[0].w = 8;
                hdr.more[0].x = 0x0706;
            }
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tags);
        pkt.emit(hdr.more);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
