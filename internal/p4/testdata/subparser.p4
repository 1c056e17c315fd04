/* Sub-parsers: a parser instantiated twice inside another, applied from
 * states with copy-in/copy-out arguments, looping over its own states; a
 * failure inside it rejects the packet (the caller's state does not go
 * on). lookahead of a header (selected on by field) and of a struct;
 * extract<T>(_). */
#include <core.p4>
#include <v1model.p4>

error { BadTlv }

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header res_t { bit<8> count; bit<8> more; bit<8> x; bit<8> flags; }
header tlv_t { bit<8> t; bit<8> v; }
struct H { ethernet_t eth; res_t res; tlv_t[4] tlv; }
struct M { bit<8> count; bit<8> more; bit<8> x; bit<8> after; }
struct pair_t { bit<8> hi; bit<8> lo; }

/* TLVs into the stack until a zero type (not consumed); type 0xff fails */
parser Tlvs(packet_in pkt, inout H hdr, out bit<8> n) {
    state start {
        n = 0;
        transition next;
    }
    state next {
        transition select(pkt.lookahead<tlv_t>().t) {
            0: accept;
            default: one;
        }
    }
    state one {
        pkt.extract(hdr.tlv.next);
        verify(hdr.tlv.last.t != 0xff, error.BadTlv);
        n = n + 1;
        transition next;
    }
}

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    Tlvs() first;
    Tlvs() second;
    state start {
        pkt.extract(hdr.eth);
        pair_t p = pkt.lookahead<pair_t>();
        m.x = p.hi ^ p.lo;
        transition select(hdr.eth.etherType) {
            0x88b5: twice;
            default: once;
        }
    }
    state once {
        first.apply(pkt, hdr, m.count);
        m.after = 1;
        transition accept;
    }
    state twice {
        first.apply(pkt, hdr, m.count);
        pkt.extract<tlv_t>(_); /* skips the zero TLV between the two runs */
        second.apply(pkt, hdr, m.more);
        m.after = 1;
        transition accept;
    }
}

control V(inout H hdr, inout M m) { apply { } }

control Ig(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.count = m.count;
        hdr.res.more = m.more;
        hdr.res.x = m.x;
        hdr.res.flags = m.after;
        if (sm.parser_error == error.BadTlv) {
            hdr.res.flags = hdr.res.flags | 0x80;
        }
    }
}

control Eg(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), Ig(), Eg(), C(), D()) main;
