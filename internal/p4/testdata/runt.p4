/* Frames shorter than an Ethernet header (p4c's table-entries-* samples), and
 * at TC frames with an IPv4 or IPv6 EtherType shorter than that header:
 * the kernel runs them padded; the runner passes their real length (the
 * parser raises error.PacketTooShort there) and cuts the padding from the
 * output, so a 3-byte frame leaves as 3 bytes, and one
 * that loses a header leaves shorter than it came (extract<H>(_) reads a
 * header and drops it: p4c's issue774-4). A lookahead of a header past
 * the real end is error.PacketTooShort too. */
#include <core.p4>
#include <v1model.p4>

header tiny_t { bit<8> port; bit<16> v; }
header pre_t { bit<8> tag; }
header wide_t { bit<32> w; }
struct H { tiny_t t; }
struct M { }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        transition select(pkt.lookahead<bit<8>>()) {
            0xff: drop_pre;
            0xfe: peek;
            default: body;
        }
    }
    state drop_pre { pkt.extract<pre_t>(_); transition body; }
    state peek {
        pkt.extract<pre_t>(_);
        wide_t w = pkt.lookahead<wide_t>();
        transition select(w.w) {
            0: reject;
            default: body;
        }
    }
    state body { pkt.extract(hdr.t); transition accept; }
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action set(bit<16> v) { hdr.t.v = v; }
    table tiny {
        key = { hdr.t.v : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = (bit<9>) hdr.t.port;
        tiny.apply();
    }
}

control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), Ig(), E(), C(), D()) main;
