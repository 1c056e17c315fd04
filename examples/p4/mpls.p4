/* mpls: an MPLS label switch over a header stack of up to 4 labels.
 * Labelled packets are switched on the top label (pop, swap or push);
 * IPv4 packets get a label pushed by an LPM route. Shows header stacks:
 * a bounded parser loop over hs.next, hs.last, hs.lastIndex, hs[i],
 * push_front, pop_front and emitting a stack; a too-deep stack ends the
 * parser with error.StackOutOfBounds and the packet is dropped. */
#include <core.p4>
#include <v1model.p4>

#define MAX_LABELS 4

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header mpls_t {
    bit<20> label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct headers_t {
    ethernet_t         ethernet;
    mpls_t[MAX_LABELS] mpls;
    ipv4_t             ipv4;
}

struct metadata_t {
    bit<32> depth;  // labels parsed
}

parser MplsParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x8847: parse_mpls;
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_mpls {
        packet.extract(hdr.mpls.next);
        transition select(hdr.mpls.last.bos) {
            0: parse_mpls;
            1: mpls_done;
        }
    }
    state mpls_done {
        meta.depth = hdr.mpls.lastIndex + 1;
        transition select(packet.lookahead<bit<4>>()) {
            4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MplsVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MplsIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(MAX_LABELS + 1, CounterType.packets) depth_seen;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action pop(bit<9> port) {
        hdr.mpls.pop_front(1);
        if (!hdr.mpls[0].isValid()) {
            hdr.ethernet.etherType = 0x0800;
        }
        standard_metadata.egress_spec = port;
    }
    action swap(bit<20> label, bit<9> port) {
        hdr.mpls[0].label = label;
        hdr.mpls[0].ttl = hdr.mpls[0].ttl - 1;
        standard_metadata.egress_spec = port;
    }
    action push(bit<20> label, bit<9> port) {
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0].label = label;
        hdr.mpls[0].tc = 0;
        hdr.mpls[0].bos = 0;
        hdr.mpls[0].ttl = hdr.mpls[1].ttl - 1;
        standard_metadata.egress_spec = port;
    }
    action push_ip(bit<20> label, bit<9> port) {
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0].label = label;
        hdr.mpls[0].tc = 0;
        hdr.mpls[0].bos = 1;
        hdr.mpls[0].ttl = hdr.ipv4.ttl;
        hdr.ethernet.etherType = 0x8847;
        standard_metadata.egress_spec = port;
    }

    table mpls_fwd {
        key = { hdr.mpls[0].label : exact @name("label"); }
        actions = { pop; swap; push; drop; }
        default_action = drop();
    }
    table ip_fwd {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { push_ip; drop; }
        default_action = drop();
    }

    apply {
        if (standard_metadata.parser_error != error.NoError) {
            drop();
            return;
        }
        depth_seen.count(meta.depth);
        if (hdr.mpls[0].isValid()) {
            if (hdr.mpls[0].ttl <= 1) {
                drop();
                return;
            }
            mpls_fwd.apply();
        } else if (hdr.ipv4.isValid()) {
            ip_fwd.apply();
        } else {
            drop();
        }
    }
}

control MplsEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control MplsComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MplsDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.mpls);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MplsParser(), MplsVerifyChecksum(), MplsIngress(), MplsEgress(),
         MplsComputeChecksum(), MplsDeparser()) main;
