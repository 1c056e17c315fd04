/* portscan: a stateful port-scan detector (the use case of seed 000, §4B).
 *
 * Packets are forwarded by IPv4 destination (table ipv4_fwd). For every
 * TCP SYN and UDP datagram, two registers indexed by a hash of the source
 * address hold the last destination port it tried and how many times in a
 * row it tried the next port up (an incremental port pattern). From
 * SCAN_THRESHOLD on, the source is blocked: its packets are dropped and
 * cloned (I2E, clone session MIRROR_SESSION) to a monitor, until the
 * control plane clears its cell (register-write ... blocked INDEX 0).
 *
 *   edgenf p4 mirroring-add CUBE 100 PORT      # where the monitor is
 */
#include <core.p4>
#include <v1model.p4>

#ifndef SCAN_THRESHOLD
#define SCAN_THRESHOLD 8
#endif
#ifndef MIRROR_SESSION
#define MIRROR_SESSION 100
#endif
#define CELLS 1024

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

/* the first 4 bytes of TCP and UDP, and TCP's flags */
header ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

header tcp_rest_t {
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    ports_t    ports;
    tcp_rest_t tcp;
}

struct metadata_t {
    bit<32> cell;
    bit<1>  probe;   /* a TCP SYN or a UDP datagram */
}

parser ScanParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
        transition select(hdr.ipv4.ihl, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (5, 0, 6): tcp;
            (5, 0, 17): udp;
            default: accept;
        }
    }
    state tcp {
        packet.extract(hdr.ports);
        packet.extract(hdr.tcp);
        transition accept;
    }
    state udp {
        packet.extract(hdr.ports);
        transition accept;
    }
}

control ScanVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ScanIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    register<bit<16>>(CELLS) last_port;
    register<bit<8>>(CELLS) scan_count;
    register<bit<1>>(CELLS) blocked;
    counter(CELLS, CounterType.packets) blocked_packets;

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
    /* non-IPv4 (ARP): by ingress port */
    table l2_fwd {
        key = { standard_metadata.ingress_port : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 64;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            l2_fwd.apply();
            return;
        }
        hash(meta.cell, HashAlgorithm.crc32, 32w0, { hdr.ipv4.srcAddr }, 32w1024);
        if (hdr.ports.isValid()) {
            if (!hdr.tcp.isValid() || (hdr.tcp.flags & 0x12) == 0x02) {
                meta.probe = 1;
            }
        }
        bit<1> b;
        blocked.read(b, meta.cell);
        if (b == 0 && meta.probe == 1) {
            bit<16> last;
            bit<8> n;
            last_port.read(last, meta.cell);
            scan_count.read(n, meta.cell);
            if (hdr.ports.dstPort == last + 1) {
                n = n |+| 1;
            } else if (hdr.ports.dstPort != last) {
                n = 0;
            }
            last_port.write(meta.cell, hdr.ports.dstPort);
            scan_count.write(meta.cell, n);
            if (n >= SCAN_THRESHOLD) {
                b = 1;
                blocked.write(meta.cell, 1);
            }
        }
        if (b == 1) {
            blocked_packets.count(meta.cell);
            clone(CloneType.I2E, MIRROR_SESSION);
            mark_to_drop(standard_metadata);
            return;
        }
        ipv4_fwd.apply();
    }
}

control ScanEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control ScanComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ScanDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ports);
        packet.emit(hdr.tcp);
    }
}

V1Switch(ScanParser(), ScanVerifyChecksum(), ScanIngress(), ScanEgress(),
         ScanComputeChecksum(), ScanDeparser()) main;
