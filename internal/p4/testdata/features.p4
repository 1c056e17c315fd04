/* Exercises: IPv6 (bit<128>) exact and lpm keys and action parameters,
 * function-like macros, exit, switch on action_run, ?:, casts, shifts,
 * int<8>, enums, hash (crc16, crc32), saturating add, a keyless table,
 * header insertion (the packet grows), checksum with payload, @id. */
#include <core.p4>
#include <v1model.p4>

#define TYPE_IPV6 0x86dd
#define TYPE_TAG  0x88b5
#define PORT(x) ((bit<9>)(x))

typedef bit<128> ip6_t;

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<16> orig_type; bit<16> h16; bit<32> crc; bit<8> flags; bit<8> id8; }
header ipv6_t {
    bit<4> version; bit<8> tc; bit<20> flow; bit<16> plen; bit<8> nh; bit<8> hl;
    ip6_t src; ip6_t dst;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }

struct headers_t { ethernet_t eth; tag_t tag; ipv6_t ipv6; udp_t udp; }
enum Color { RED, GREEN }
struct meta_t { bit<8> a; int<8> s; Color c; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            TYPE_IPV6: ipv6;
            default: accept;
        }
    }
    state ipv6 {
        pkt.extract(hdr.ipv6);
        verify(hdr.ipv6.version == 6, error.HeaderTooShort);
        transition select(hdr.ipv6.nh) {
            17: udp;
            default: accept;
        }
    }
    state udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ig(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action rewrite(ip6_t addr, bit<9> port) {
        hdr.ipv6.dst = addr;
        sm.egress_spec = port;
    }
    @id(0x01000042)
    action fwd(bit<9> port) { sm.egress_spec = PORT(port); }
    table v6route {
        key = { hdr.ipv6.dst : lpm; }
        actions = { rewrite; fwd; drop; }
        default_action = drop();
    }
    table v6deny {
        key = { hdr.ipv6.src : exact; }
        actions = { drop; NoAction; }
        default_action = NoAction();
    }
    action add_tag(bit<8> id) {
        hdr.tag.setValid();
        hdr.tag.orig_type = hdr.eth.type;
        hdr.eth.type = TYPE_TAG;
        hash(hdr.tag.h16, HashAlgorithm.crc16, 16w0, { hdr.ipv6.src, hdr.udp.sport }, 17w65536);
        hash(hdr.tag.crc, HashAlgorithm.crc32, 32w0, { hdr.ipv6.src, hdr.udp.sport }, 64w0x100000000);
        hdr.tag.id8 = id;
    }
    table stamp {
        actions = { add_tag; }
        default_action = add_tag(7);
    }
    apply {
        if (!hdr.ipv6.isValid() || sm.parser_error != error.NoError) {
            drop();
            exit;
        }
        if (hdr.ipv6.hl <= 1) {
            drop();
            exit;
        }
        hdr.ipv6.hl = hdr.ipv6.hl - 1;
        if (v6deny.apply().hit) {
            exit;
        }
        switch (v6route.apply().action_run) {
            rewrite: { meta.a = 1; }
            fwd: { meta.a = 2; }
            default: { exit; }
        }
        meta.s = -3;
        meta.c = Color.GREEN;
        bit<8> f = 0;
        if (meta.s < 0) {
            f = f | 0x80;
        }
        f = f | (meta.c == Color.GREEN ? 8w0x40 : 8w0);
        f = f | (meta.a << 4);
        f = f | ((bit<8>)hdr.ipv6.tc >> 6);
        stamp.apply();
        hdr.tag.flags = f;
        hdr.udp.sport = hdr.udp.sport |+| 0xfff0;
        hdr.udp.dport[15:8] = hdr.ipv6.dst[7:0];
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 2) {
            hdr.ipv6.flow = hdr.ipv6.flow + 1;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv6.src, hdr.ipv6.dst, 16w0, hdr.udp.len, 24w0, hdr.ipv6.nh,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.tag);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
