/* unions: a header_union of IPv4 and IPv6 selected by EtherType.
 * u.isValid() picks the port; TTL/hop limit - 1 on the valid member;
 * dst ff..ff turns IPv4 into IPv6 with setValid (the other member becomes
 * invalid, the packet grows), dst ff..fe turns IPv6 into IPv4 by assigning
 * a header to the member (the packet shrinks). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<8>  vihl;
    bit<8>  tos;
    bit<16> len;
    bit<32> idfrag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   tc;
    bit<20>  flow;
    bit<16>  plen;
    bit<8>   nh;
    bit<8>   hops;
    bit<128> src;
    bit<128> dst;
}

header_union ip_t {
    ipv4_t v4;
    ipv6_t v6;
}

struct headers_t {
    ethernet_t eth;
    ip_t       ip;
}

struct metadata_t {
    bit<8> ttl;
}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x0800: v4;
            0x86dd: v6;
            default: accept;
        }
    }
    state v4 {
        packet.extract(hdr.ip.v4);
        transition accept;
    }
    state v6 {
        packet.extract(hdr.ip.v6);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.ip.isValid()) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
        }
        if (hdr.ip.v4.isValid()) {
            hdr.ip.v4.ttl = hdr.ip.v4.ttl - 1;
            meta.ttl = hdr.ip.v4.ttl;
        }
        if (hdr.ip.v6.isValid()) {
            hdr.ip.v6.hops = hdr.ip.v6.hops - 1;
            meta.ttl = hdr.ip.v6.hops;
        }
        if (hdr.eth.dstAddr == 0xffffffffffff && hdr.ip.v4.isValid()) {
            hdr.ip.v6.setValid();
            hdr.ip.v6.version = 6;
            hdr.ip.v6.tc = 0;
            hdr.ip.v6.flow = 0;
            hdr.ip.v6.plen = 0;
            hdr.ip.v6.nh = 59;
            hdr.ip.v6.hops = meta.ttl;
            hdr.ip.v6.src = 0x20010db8000000000000000000000001;
            hdr.ip.v6.dst = 0x20010db8000000000000000000000002;
            hdr.eth.etherType = 0x86dd;
        } else if (hdr.eth.dstAddr == 0xfffffffffffe && hdr.ip.v6.isValid()) {
            ipv4_t x;
            x.setValid();
            x = { 0x45, 0, 20, 0, meta.ttl, 59, 0, 0xc6120001, 0xc6120002 };
            hdr.ip.v4 = x;
            hdr.eth.etherType = 0x0800;
        }
        if (hdr.ip.v4.isValid() && hdr.ip.v6.isValid()) {
            mark_to_drop(sm); // never: one member at most
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.ip);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
