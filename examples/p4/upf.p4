/* upf: a minimal 5G user-plane function.
 * Port 0 is the access side (N3, GTP-U from the gNB), port 1 the core (N6).
 * Uplink:   GTP-U/UDP/IPv4 from port 0 -> table uplink by TEID -> decap -> port 1.
 * Downlink: IPv4 from port 1 -> table downlink by UE address -> encap with
 *           the session's TEID and gNB address -> port 0.
 * The inner and outer IPv4 checksums are verified; the outer one is
 * recomputed after encapsulation (outer UDP checksum 0, as allowed for IPv4). */
#include <core.p4>
#include <v1model.p4>

#define GTPU_PORT 2152
const bit<9> ACCESS = 0;
const bit<9> CORE = 1;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  dscp;
    bit<16> totalLen;
    bit<16> id;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

header gtpu_t {
    bit<3>  version;
    bit<1>  pt;
    bit<1>  spare;
    bit<1>  ex;
    bit<1>  seq;
    bit<1>  npdu;
    bit<8>  msgtype;
    bit<16> msglen;
    bit<32> teid;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;   /* outer on uplink, the UE packet on downlink */
    udp_t      udp;
    gtpu_t     gtpu;
    ipv4_t     inner;
}

struct metadata_t {
    bit<32> teid;
}

parser UpfParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
        /* only the access side carries GTP-U; a UE's own UDP stays payload */
        transition select(standard_metadata.ingress_port, hdr.ipv4.proto) {
            (ACCESS, 17): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dport) {
            GTPU_PORT: parse_gtpu;
            default: accept;
        }
    }
    state parse_gtpu {
        packet.extract(hdr.gtpu);
        verify(hdr.gtpu.version == 1 && hdr.gtpu.msgtype == 0xff, error.NoMatch);
        packet.extract(hdr.inner);
        transition accept;
    }
}

control UpfVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.totalLen,
              hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.inner.isValid(),
            { hdr.inner.version, hdr.inner.ihl, hdr.inner.dscp, hdr.inner.totalLen,
              hdr.inner.id, hdr.inner.flags, hdr.inner.fragOffset, hdr.inner.ttl,
              hdr.inner.proto, hdr.inner.src, hdr.inner.dst },
            hdr.inner.checksum, HashAlgorithm.csum16);
    }
}

control UpfIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) ul_count;
    counter(2, CounterType.packets_and_bytes) dl_bytes;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action decap() {
        hdr.ipv4 = hdr.inner;
        hdr.inner.setInvalid();
        hdr.udp.setInvalid();
        hdr.gtpu.setInvalid();
        standard_metadata.egress_spec = CORE;
    }
    table uplink {
        key = { hdr.gtpu.teid : exact @name("teid"); }
        actions = { decap; drop; }
        default_action = drop();
        counters = ul_count;
    }
    action encap(bit<32> teid, bit<32> gnb, bit<32> upf) {
        hdr.inner = hdr.ipv4;
        hdr.ipv4.setValid();
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.totalLen = hdr.inner.totalLen + (20 + 8 + 8);
        hdr.ipv4.id = 0;
        hdr.ipv4.flags = 0b010;
        hdr.ipv4.fragOffset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.proto = 17;
        hdr.ipv4.src = upf;
        hdr.ipv4.dst = gnb;
        hdr.udp.setValid();
        hdr.udp.sport = GTPU_PORT;
        hdr.udp.dport = GTPU_PORT;
        hdr.udp.len = hdr.inner.totalLen + 16;
        hdr.udp.checksum = 0;
        hdr.gtpu.setValid();
        hdr.gtpu.version = 1;
        hdr.gtpu.pt = 1;
        hdr.gtpu.spare = 0;
        hdr.gtpu.ex = 0;
        hdr.gtpu.seq = 0;
        hdr.gtpu.npdu = 0;
        hdr.gtpu.msgtype = 0xff;
        hdr.gtpu.msglen = hdr.inner.totalLen;
        hdr.gtpu.teid = teid;
        standard_metadata.egress_spec = ACCESS;
    }
    table downlink {
        key = { hdr.ipv4.dst : exact @name("ue_addr"); }
        actions = { encap; drop; }
        default_action = drop();
    }
    apply {
        if (standard_metadata.checksum_error == 1 || standard_metadata.parser_error != error.NoError) {
            drop();
            exit;
        }
        if (standard_metadata.ingress_port == ACCESS && hdr.gtpu.isValid()) {
            uplink.apply();
        } else if (standard_metadata.ingress_port == CORE && hdr.ipv4.isValid()) {
            if (downlink.apply().hit) {
                dl_bytes.count(0);
            }
        } else {
            drop();
        }
    }
}

control UpfEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) { apply { } }

control UpfCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.totalLen,
              hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control UpfDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.gtpu);
        packet.emit(hdr.inner);
    }
}

V1Switch(UpfParser(), UpfVerify(), UpfIngress(), UpfEgress(), UpfCompute(), UpfDeparser()) main;
