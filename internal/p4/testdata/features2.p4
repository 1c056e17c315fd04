/* Exercises: P4 functions, tuples, verify_checksum_with_payload, const entries with ternary and
 * range keysets, .miss, switch on bit<N> with shared labels, hash csum16 and
 * identity, casts that widen. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
struct headers { eth_t eth; ipv4_t ipv4; udp_t udp; }
struct meta_t { bit<16> h; bit<32> id; bit<8> cls; }

/* P4 functions: an identity with a local and two returns, a void one. */
bit<16> ident16(in bit<16> x) {
    bit<16> y = x;
    if (x == 0) {
        return 0;
    }
    return y;
}
void nothing(in bit<8> v) { }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x0800: ip; default: accept; }
    }
    state ip {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) { 17: udp; default: accept; }
    }
    state udp { pkt.extract(hdr.udp); transition accept; }
}

control VC(inout headers hdr, inout meta_t meta) {
    apply {
        verify_checksum_with_payload(hdr.udp.isValid(),
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.proto, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len },
            hdr.udp.csum, HashAlgorithm.csum16);
    }
}

control Ig(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_cls(bit<8> c) { meta.cls = c; }
    table cls {
        key = { hdr.ipv4.dst : ternary; hdr.udp.dport : range; }
        actions = { set_cls; NoAction; }
        const entries = {
            (0xc6120000 &&& 0xffff0000, 0 .. 1023) : set_cls(1);
            (_, 1024 .. 65535) : set_cls(2);
            (_, _) : set_cls(3);
        }
    }
    table known_src {
        key = { hdr.eth.src : exact; }
        actions = { NoAction; }
    }
    apply {
        if (sm.checksum_error == 1) {
            sm.egress_spec = 510;
            exit;
        }
        if (!hdr.udp.isValid()) {
            mark_to_drop(sm);
            exit;
        }
        cls.apply();
        if (known_src.apply().miss) {
            meta.cls = meta.cls + 10;
        }
        tuple<bit<32>, bit<32>> addrs = { hdr.ipv4.src, 0 };
        addrs[1] = hdr.ipv4.dst;
        hash(meta.h, HashAlgorithm.csum16, 16w0, addrs, 32w65536);
        hash(meta.id, HashAlgorithm.identity, 32w100, { hdr.udp.sport, hdr.udp.dport }, 64w0x100000000);
        switch (meta.cls) {
            11: { sm.egress_spec = 1; }
            12:
            13: { sm.egress_spec = 2; }
            default: { sm.egress_spec = 3; }
        }
        hdr.ipv4.id = ident16(meta.h);
        nothing(meta.cls);
        hdr.eth.src = (bit<48>)meta.id;
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.len, hdr.ipv4.id,
              hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); pkt.emit(hdr.udp); }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
