/* Compile-and-load coverage for expression and statement forms. */
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header six_t { bit<128> a; bit<64> b; bit<16> c; bool f; bit<7> pad; }
struct H { eth_t eth; six_t six; }
enum Dir { IN, OUT }
bool is_doc(in bit<128> a) { return a[127:96] == 0x20010db8; }
struct M { bit<64> x; int<16> s; bit<8> n; bool ok; Dir d; error e; bit<1> one; }

parser P(packet_in pkt, out H h, inout M m, inout standard_metadata_t sm) {
    bit<16> t;
    state start {
        pkt.extract(h.eth);
        t = h.eth.type;
        transition select(t, h.eth.dst[7:0]) {
            (0x88b6, _): six;
            (_, 0x01 .. 0x0f): accept;
            default: reject;
        }
    }
    state six { pkt.extract(h.six); transition accept; }
}

control V(inout H h, inout M m) { apply { } }

control I(inout H h, inout M m, inout standard_metadata_t sm) {
    M copy;
    action stop() { exit; }
    action setb(bit<64> v) { h.six.b = v; }
    table wide {
        key = { h.six.a : exact; h.six.f : exact; }
        actions = { stop; setb; NoAction; }
        const entries = {
            (0x20010db8000000000000000000000001, true) : stop();
            (0x20010db8000000000000000000000002, false) : setb(7);
        }
        default_action = NoAction();
    }
    table t2 { key = { m.x : exact; } actions = { NoAction; stop; } }
    apply {
        m.x = h.six.b + (bit<64>)h.six.c * 3;
        m.x = m.x >> m.n;
        m.x = (bit<64>)1 << m.n;
        m.s = (int<16>)h.six.c;
        m.s = m.s >> 2;
        if (m.s < -5 && m.s >= (int<16>)-100) { m.n = 1; } else if (t2.apply().hit) { m.n = 2; } else { m.n = 3; }
        m.ok = h.six.c > 10;
        m.one = (bit<1>)m.ok;
        m.ok = (bool)m.one;
        h.six.b[15:8] = 0xab;
        h.six.a[127:96] = 0x20010db8;
        h.six.a[31:0] = h.six.c ++ 16w1;
        if (h.six.a == 0x20010db8000000000000000000000003) { m.n = m.n + 1; }
        if (is_doc(h.six.a)) { m.n = m.n + 2; }
        m.d = Dir.OUT;
        if (m.d == Dir.IN) { return; }
        m.e = error.NoError;
        if (sm.parser_error != m.e) { mark_to_drop(sm); }
        m.n = 8w250 |+| 8w10;
        m.n = m.n |-| 8w3;
        m.n = m.n / 3 + m.n % 5;
        m.n = m.ok ? m.n : ~m.n;
        m.n = -m.n;
        m.x = h.eth.src ++ 8w1 ++ 8w2;
        m.n += 1;
        copy = m;
        h.eth = { 1, 2, 0x88b6 };
        switch (m.n) { default: { m.n = copy.n; } }
        switch (wide.apply().action_run) {
            stop: { exit; }
            setb: { h.six.c = 1; }
        }
        sm.egress_spec = (bit<9>)m.n & 0x3f;
    }
}

control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pkt, in H h) { apply { pkt.emit(h); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
