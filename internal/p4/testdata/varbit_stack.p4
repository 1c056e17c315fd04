/* A stack of headers with a varbit field, extracted with
 * extract(hs.next, bits) in a parser loop: the elements keep their own
 * lengths, a copy between elements moves the length with the value, the
 * stack is emitted element by element; a third TLV overflows the stack
 * (error.StackOutOfBounds, reported in the last byte of the source MAC). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tlv_t {
    bit<8>     more;
    bit<8>     len;
    varbit<64> value;
}

struct headers_t {
    ethernet_t eth;
    tlv_t[2]   tlv;
}

struct metadata_t {}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition tlv;
    }
    state tlv {
        packet.extract(hdr.tlv.next, (bit<32>)packet.lookahead<bit<16>>()[7:0] * 8);
        transition select(hdr.tlv.last.more) {
            0: accept;
            default: tlv;
        }
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply {} }

control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.eth.srcAddr[7:0] = 0xee;
            return;
        }
        if (hdr.tlv[1].isValid() && hdr.tlv[1].len == 1) {
            hdr.tlv[0] = hdr.tlv[1];     // the length comes with the value
        }
    }
}

control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply {} }
control CC(inout headers_t hdr, inout metadata_t meta) { apply {} }

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.tlv);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
