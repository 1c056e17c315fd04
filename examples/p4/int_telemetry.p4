/* int_telemetry: in-band telemetry with latency-driven priority and
 * selective mirroring (the use case of seed 000, §4A).
 *
 * UDP datagrams to INT_UDP_PORT carry a telemetry header after the UDP
 * header: the id of the last switch, the UDP port the payload is for, and
 * the time the packet has spent in the network so far (µs). Each switch
 * adds its own residence time in egress and writes its id. When the
 * accumulated delay is over the threshold, ingress raises the packet's
 * priority (standard_metadata.priority and the IPv4 DSCP, to EF) and
 * clones it (I2E) to a mirror port, for an external collector. At the
 * sink (an egress port in table int_sink) the header is removed and the
 * datagram goes to its real UDP port. Every switch reports its hop to the
 * daemon (a digest of int_hop_t: switch id, its residence time and the
 * delay so far), which exports per-switch latency histograms
 * (edgenf_p4_int_hop_latency_seconds) to Prometheus and InfluxDB.
 *
 *   edgenf p4 table-set-default CUBE int_config set_int_params 7 1000 200
 *   edgenf p4 mirroring-add CUBE 200 MIRROR_PORT
 */
#include <core.p4>
#include <v1model.p4>

#define INT_UDP_PORT 5555

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
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

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* 12 bytes */
header int_t {
    bit<32> switch_id;
    bit<16> target_port;
    bit<16> reserved;
    bit<32> delay_us;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    int_t      int_hdr;
}

/* one hop's INT metadata, reported to the daemon */
struct int_hop_t {
    bit<32> switch_id;
    bit<32> hop_latency_us;
    bit<32> path_latency_us;
}

struct metadata_t {
    bit<32> switch_id;
    bit<32> threshold;
    bit<32> session;
}

parser IntParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, 17): udp;
            default: accept;
        }
    }
    state udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            INT_UDP_PORT: int_hdr;
            default: accept;
        }
    }
    state int_hdr {
        packet.extract(hdr.int_hdr);
        transition accept;
    }
}

control IntVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IntIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter(1, CounterType.packets) mirrored;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    table ipv4_fwd {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 256;
    }
    table l2_fwd {
        key = { standard_metadata.ingress_port : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 64;
    }
    /* this switch's id, the delay threshold (µs) and the mirror session */
    action set_int_params(bit<32> switch_id, bit<32> threshold, bit<32> session) {
        meta.switch_id = switch_id;
        meta.threshold = threshold;
        meta.session = session;
    }
    table int_config {
        actions = { set_int_params; }
        default_action = set_int_params(1, 1000, 200);
    }
    action raise_priority() {
        standard_metadata.priority = 7;
        hdr.ipv4.dscp = 46; /* EF */
    }
    action mirror() {
        mirrored.count(0);
        clone(CloneType.I2E, meta.session);
    }
    table set_priority {
        key = { hdr.int_hdr.target_port : exact; }
        actions = { raise_priority; NoAction; }
        default_action = raise_priority();
        size = 64;
    }
    table mirror_table {
        actions = { mirror; NoAction; }
        default_action = mirror();
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            l2_fwd.apply();
            return;
        }
        ipv4_fwd.apply();
        if (hdr.int_hdr.isValid()) {
            int_config.apply();
            if (hdr.int_hdr.delay_us > meta.threshold) {
                set_priority.apply();
                mirror_table.apply();
            }
        }
    }
}

control IntEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action strip_int() {
        hdr.udp.dstPort = hdr.int_hdr.target_port;
        hdr.udp.length = hdr.udp.length - 12;
        hdr.udp.checksum = 0;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen - 12;
        hdr.int_hdr.setInvalid();
    }
    /* egress ports towards the sink: the header is removed */
    table int_sink {
        key = { standard_metadata.egress_port : exact; }
        actions = { strip_int; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    apply {
        /* mirrored copies (instance_type 1) leave as they arrived */
        if (hdr.int_hdr.isValid() && standard_metadata.instance_type == 0) {
            bit<32> hop = (bit<32>)(standard_metadata.egress_global_timestamp - standard_metadata.ingress_global_timestamp);
            hdr.int_hdr.switch_id = meta.switch_id;
            hdr.int_hdr.delay_us = hdr.int_hdr.delay_us + hop;
            digest<int_hop_t>(1, {meta.switch_id, hop, hdr.int_hdr.delay_us});
            hdr.udp.checksum = 0;
            int_sink.apply();
        }
    }
}

control IntComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control IntDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.int_hdr);
    }
}

V1Switch(IntParser(), IntVerifyChecksum(), IntIngress(), IntEgress(),
         IntComputeChecksum(), IntDeparser()) main;
