/* tcpflags: a TCP flag guard between port 0 and port 1, written with the
 * TCP flags as a struct inside the TCP header (P4-16 1.2.2+), as real
 * programs do: tcp.flags.ctl.syn, tcp.flags.ecn.ece.
 *   - drops the scans no stack sends: no flag at all (null scan), SYN+FIN,
 *     SYN+RST, and FIN+PSH+URG (Xmas), by a const table on flag fields and
 *     a comparison of the whole control-flag struct;
 *   - the control plane blocks new connections (SYN without ACK) to chosen
 *     ports (table syn_block, key hdr.tcp.flags.ctl.syn);
 *   - clears the ECN flags (cwr, ece) of connections to port 80 by assigning
 *     the struct, and fixes the TCP checksum (over the pseudo-header, the
 *     header and the payload);
 *   - counts verdicts: index 0 forwarded, 1 dropped. */
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

struct ecn_flags_t {
    bit<1> cwr;
    bit<1> ece;
}

struct ctl_flags_t {
    bit<1> urg;
    bit<1> ack;
    bit<1> psh;
    bit<1> rst;
    bit<1> syn;
    bit<1> fin;
}

struct tcp_flags_t {
    bit<1>      ns;
    ecn_flags_t ecn;
    ctl_flags_t ctl;
}

header tcp_t {
    bit<16>     srcPort;
    bit<16>     dstPort;
    bit<32>     seqNo;
    bit<32>     ackNo;
    bit<4>      dataOffset;
    bit<3>      res;
    tcp_flags_t flags;      // 9 bits at bit 103: not byte aligned
    bit<16>     window;
    bit<16>     checksum;
    bit<16>     urgentPtr;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t     ipv4;
    tcp_t      tcp;
}

struct metadata_t {
    bit<16> tcpLen;
    bit<1>  dropped;
}

parser TcpParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
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
        meta.tcpLen = hdr.ipv4.totalLen - 20;
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, 6): parse_tcp;
            default: accept;
        }
    }
    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
}

control TcpVerify(inout headers_t hdr, inout metadata_t meta) { apply {} }

control TcpIngress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t sm) {
    counter(2, CounterType.packets) verdicts;

    action drop() {
        mark_to_drop(sm);
        meta.dropped = 1;
    }
    action allow() {}

    // scans: the flag combinations no TCP stack sends
    table scan {
        key = {
            hdr.tcp.flags.ctl.syn : exact;
            hdr.tcp.flags.ctl.fin : exact;
            hdr.tcp.flags.ctl.rst : ternary;
            hdr.tcp.flags.ctl.psh : ternary;
            hdr.tcp.flags.ctl.urg : ternary;
        }
        actions = { drop; allow; }
        const entries = {
            (1, 1, _, _, _) : drop();      // SYN+FIN
            (1, 0, 1, _, _) : drop();      // SYN+RST
            (0, 1, _, 1, 1) : drop();      // Xmas
        }
        default_action = allow();
    }

    // new connections blocked per destination port
    table syn_block {
        key = {
            hdr.tcp.flags.ctl.syn : exact;
            hdr.tcp.flags.ctl.ack : exact;
            hdr.tcp.dstPort       : exact;
        }
        actions = { drop; allow; }
        default_action = allow();
    }

    apply {
        sm.egress_spec = sm.ingress_port == 0 ? 9w1 : 9w0;
        if (!hdr.tcp.isValid()) {
            verdicts.count(0);
            return;
        }
        ctl_flags_t none = { 0, 0, 0, 0, 0, 0 };
        if (hdr.tcp.flags.ctl == none) {
            drop();                         // null scan
        } else {
            switch (scan.apply().action_run) {
                allow: { syn_block.apply(); }
            }
        }
        if (meta.dropped == 1) {
            verdicts.count(1);
            return;
        }
        if (hdr.tcp.dstPort == 80) {
            hdr.tcp.flags.ecn = { 0, 0 };
        }
        verdicts.count(0);
    }
}

control TcpEgress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t sm) { apply {} }

control TcpCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum_with_payload(hdr.tcp.isValid(),
            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol,
              meta.tcpLen, hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.tcp.seqNo,
              hdr.tcp.ackNo, hdr.tcp.dataOffset, hdr.tcp.res, hdr.tcp.flags,
              hdr.tcp.window, 16w0, hdr.tcp.urgentPtr },
            hdr.tcp.checksum, HashAlgorithm.csum16);
    }
}

control TcpDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.eth);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.tcp);
    }
}

V1Switch(TcpParser(), TcpVerify(), TcpIngress(), TcpEgress(), TcpCompute(),
         TcpDeparser()) main;
