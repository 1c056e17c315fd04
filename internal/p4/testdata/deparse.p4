/* deparse.p4: the deparser writes only what may have changed (see
 * internal/p4/backend/fastpath.go). Headers left alone, headers whose
 * fields are written (assignment, inout argument of a sub-control, hash output, an
 * assignment in the parser, whole-header assignment), headers removed,
 * added and replaced in front of headers left in place. The mode is the
 * IPv4 diffserv byte; deparse.stf has one packet per mode. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
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

/* a made-up 4-byte shim between IPv4 (protocol 253) and UDP */
header shim_t {
    bit<8>  next;
    bit<4>  a;
    bit<4>  b;
    bit<16> tag;
}

header shim2_t {
    bit<16> x;
    bit<8>  next;
    bit<8>  y;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    shim_t     shim;
    shim2_t    shim2;
    udp_t      udp;
}

struct metadata { }

control Dec(inout bit<8> v) {
    apply { v = v - 1; }
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            253: parse_shim;
            17: parse_udp;
            default: accept;
        }
    }
    state parse_shim {
        pkt.extract(hdr.shim);
        transition select(hdr.shim.next) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        hdr.udp.checksum = 0; /* written in the parser: always deparsed */
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Dec() dec;
    apply {
        sm.egress_spec = 1;
        if (!hdr.ipv4.isValid()) {
            exit;
        }
        bit<8> mode = hdr.ipv4.diffserv;
        if (mode == 1) {
            dec.apply(hdr.ipv4.ttl);
        } else if (mode == 2 && hdr.shim.isValid()) {
            /* remove the shim: UDP moves up, in place at XDP */
            hdr.ipv4.protocol = hdr.shim.next;
            hdr.ipv4.totalLen = hdr.ipv4.totalLen - 4;
            hdr.shim.setInvalid();
        } else if (mode == 3 && !hdr.shim.isValid()) {
            /* add a shim: UDP moves down */
            hdr.shim.setValid();
            hdr.shim.next = hdr.ipv4.protocol;
            hdr.shim.a = 0xa;
            hdr.shim.b = 0xb;
            hdr.shim.tag = 0x1234;
            hdr.ipv4.protocol = 253;
            hdr.ipv4.totalLen = hdr.ipv4.totalLen + 4;
        } else if (mode == 4) {
            /* validity changes only: the same bytes */
            hdr.ipv4.setInvalid();
            hdr.ipv4.setValid();
        } else if (mode == 5) {
            /* whole-header assignment */
            ethernet_t e = hdr.ethernet;
            e.dstAddr = hdr.ethernet.srcAddr;
            e.srcAddr = hdr.ethernet.dstAddr;
            hdr.ethernet = e;
        } else if (mode == 6 && hdr.shim.isValid()) {
            /* a header of the same size in place of a parsed one */
            hdr.shim2.setValid();
            hdr.shim2.x = 0x5678;
            hdr.shim2.next = hdr.shim.next;
            hdr.shim2.y = 0x9a;
            hdr.shim.setInvalid();
        } else if (mode == 7) {
            /* an extern's out argument */
            hash(hdr.ipv4.identification, HashAlgorithm.identity, 16w0, { hdr.ipv4.ttl }, 32w65536);
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.shim);
        pkt.emit(hdr.shim2);
        pkt.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
