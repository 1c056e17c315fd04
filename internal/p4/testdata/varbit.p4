/* varbit: IPv4 options as a varbit<320> header extracted with
 * extract(hdr, bits), emitted back and covered by the IPv4 checksum; a TLV
 * whose value is a varbit<64> sized by lookahead. Parser errors are
 * reported in the last byte of the source MAC: 1 PacketTooShort,
 * 4 HeaderTooShort, 6 ParserInvalidArgument. */
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

header ipv4_options_t {
    varbit<320> options;
}

header tlv_t {
    bit<8>     type;
    bit<8>     len;
    varbit<64> value;
}

struct headers_t {
    ethernet_t     eth;
    ipv4_t         ipv4;
    ipv4_options_t opt;
    tlv_t          tlv;
}

struct metadata_t {}

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x0800: parse_ipv4;
            0x88b5: parse_tlv;
            0x88b6: parse_tlv_bits;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            5: accept;
            default: parse_options;
        }
    }
    state parse_options {
        packet.extract(hdr.opt, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition accept;
    }
    state parse_tlv {
        // the value is len bytes
        packet.extract(hdr.tlv, (bit<32>)packet.lookahead<bit<16>>()[7:0] * 8);
        transition accept;
    }
    state parse_tlv_bits {
        // the value is len bits (must be a multiple of 8)
        packet.extract(hdr.tlv, (bit<32>)packet.lookahead<bit<16>>()[7:0]);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }

control Ig(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) {
            hdr.eth.srcAddr[7:0] = 1;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.eth.srcAddr[7:0] = 4;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.eth.srcAddr[7:0] = 6;
        }
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        }
        if (hdr.tlv.isValid()) {
            hdr.tlv.type = hdr.tlv.type + 1;
        }
    }
}

control Eg(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.opt.options },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control D(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.opt);
        packet.emit(hdr.tlv);
    }
}

V1Switch(P(), VC(), Ig(), Eg(), CC(), D()) main;
