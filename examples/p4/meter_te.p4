/* meter_te: meter-driven traffic engineering. The controller pre-installs,
 * per flow (IPv4 source and destination), a primary port and an
 * alternative port, and gives the flow's entry a direct meter whose
 * committed rate is what the primary path should carry. The data plane
 * decides per packet, with no controller round trip: a flow within its
 * committed rate (GREEN) takes the primary port, above it (YELLOW) it is
 * re-routed to the alternative port, above its peak rate (RED) it is
 * dropped. Re-routed packets are counted per alternative port. */
#include <core.p4>
#include <v1model.p4>

const bit<2> GREEN  = 0;
const bit<2> YELLOW = 1;
const bit<2> RED    = 2;

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

struct headers_t {
    ethernet_t eth;
    ipv4_t     ipv4;
}

struct metadata_t {
    bit<2> color;
}

parser TeParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control TeVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control TeIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) {
    // per flow entry: committed rate = what the primary path carries
    direct_meter<bit<2>>(MeterType.bytes) flow_meter;
    counter(64, CounterType.packets_and_bytes) rerouted;

    action drop() {
        mark_to_drop(sm);
    }
    action route(bit<9> port, bit<9> alt_port) {
        flow_meter.read(meta.color);
        if (meta.color == GREEN) {
            sm.egress_spec = port;
        } else if (meta.color == YELLOW) {
            sm.egress_spec = alt_port;
            rerouted.count((bit<32>)alt_port);
        } else {
            mark_to_drop(sm);
        }
    }
    table flows {
        key = {
            hdr.ipv4.srcAddr : exact;
            hdr.ipv4.dstAddr : exact;
        }
        actions = { route; drop; }
        default_action = drop();
        meters = flow_meter;
        size = 1024;
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            flows.apply();
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        } else {
            drop();
        }
    }
}

control TeEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t sm) {
    apply { }
}

control TeCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control TeDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(TeParser(), TeVerify(), TeIngress(), TeEgress(), TeCompute(),
         TeDeparser()) main;
