/* acl: a stateless firewall between port 0 (inside) and port 1 (outside).
 * The acl table matches ternary addresses and protocol and a range of
 * destination ports, with priorities; a const table classifies traffic. */
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

header l4_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_t       l4;
}

enum bit<8> IpProto {
    ICMP = 1,
    TCP  = 6,
    UDP  = 17
}

struct metadata_t {
    bit<16> dport;
    bit<8>  class;
    bit<32> ports;
}

parser AclParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (0, 6 &&& 0xfb): parse_l4;   /* 6 (TCP) and 2 */
            (0, 17): parse_l4;
            (0, 132..136): parse_l4;     /* SCTP, UDP-lite, ... */
            default: accept;
        }
    }
    state parse_l4 {
        packet.extract(hdr.l4);
        meta.dport = hdr.l4.dstPort;
        transition accept;
    }
}

control AclVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control AclIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter(4, CounterType.packets) verdicts;

    action allow() {
        verdicts.count(0);
    }
    action deny() {
        verdicts.count(1);
        mark_to_drop(standard_metadata);
    }
    table acl {
        key = {
            hdr.ipv4.srcAddr  : ternary;
            hdr.ipv4.dstAddr  : ternary;
            hdr.ipv4.protocol : ternary;
            meta.dport        : range;
        }
        actions = { allow; deny; }
        default_action = allow();
        size = 256;
    }
    action set_class(bit<8> c) {
        meta.class = c;
    }
    table classify {
        key = { hdr.ipv4.protocol : exact; hdr.ipv4.isValid() : exact; }
        actions = { set_class; NoAction; }
        const entries = {
            (IpProto.TCP, true)  : set_class(1);
            (IpProto.UDP, true)  : set_class(2);
            (IpProto.ICMP, true) : set_class(3);
        }
        default_action = NoAction();
    }
    apply {
        /* forward between port 0 and port 1 */
        standard_metadata.egress_spec = standard_metadata.ingress_port ^ 1;
        if (!hdr.ipv4.isValid()) {
            return;
        }
        classify.apply();
        meta.ports = hdr.l4.srcPort ++ hdr.l4.dstPort;
        switch (acl.apply().action_run) {
            deny: { return; }
        }
        /* mark ICMP (class 3) with DSCP 46 via a slice; saturate the TTL down */
        if (meta.class == 3) {
            hdr.ipv4.diffserv[7:2] = 46;
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl |-| 1;
    }
}

control AclEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) { apply { } }

control AclCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.totalLen, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control AclDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.l4);
    }
}

V1Switch(AclParser(), AclVerify(), AclIngress(), AclEgress(), AclCompute(), AclDeparser()) main;
