/* l2learn: a learning switch. Frames to a known destination MAC are
 * forwarded by the dmac table; unknown destinations and broadcast are
 * flooded through multicast group 1. A source MAC the smac table does not
 * know is reported to the control plane with a digest (learn_t); the p4
 * cube's learning rules (settings.learn) then install it into smac (stop
 * reporting) and dmac (forward to its port), as a P4Runtime learning
 * controller does. With an idle_timeout on the smac rule, a station that
 * stays silent that long is forgotten (its smac and dmac entries go).
 *
 * The CPU port (255): link-local control frames (01:80:c2:00:00:0x: STP,
 * LLDP, ...) go to the control plane (packet-in) with a packet_in header
 * naming the port they came in on; frames the control plane sends
 * (packet-out) carry a packet_out header naming the port to leave by
 * (0: flood). */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255
#define FLOOD_GROUP 1

typedef bit<48> mac_addr_t;
typedef bit<9>  port_t;

@controller_header("packet_in")
header packet_in_t {
    port_t  ingress_port;
    bit<7>  _pad;
}

@controller_header("packet_out")
header packet_out_t {
    port_t  egress_port;
    bit<7>  _pad;
}

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
}

/* what the control plane learns: a MAC address and the port it is behind */
struct learn_t {
    mac_addr_t srcAddr;
    port_t     ingress_port;
}

struct metadata_t { }

parser LearnParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control LearnVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control LearnIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    action learn() {
        digest<learn_t>(1, {hdr.ethernet.srcAddr, standard_metadata.ingress_port});
    }
    table smac {
        key = { hdr.ethernet.srcAddr : exact; }
        actions = { learn; NoAction; }
        default_action = learn();
        size = 4096;
        /* the data path records each source's last frame: a learning rule
         * with idle_timeout forgets stations that fall silent */
        support_timeout = true;
    }

    action forward(port_t port) {
        standard_metadata.egress_spec = port;
    }
    action flood() {
        standard_metadata.mcast_grp = FLOOD_GROUP;
    }
    table dmac {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { forward; flood; }
        default_action = flood();
        size = 4096;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            /* from the control plane: out of the port it names, or flooded */
            if (hdr.packet_out.egress_port == 0) {
                flood();
            } else {
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
            }
            log_msg("packet-out to port {}", {hdr.packet_out.egress_port});
            hdr.packet_out.setInvalid();
            return;
        }
        if (!hdr.ethernet.isValid()) {
            mark_to_drop(standard_metadata);
            return;
        }
        if (hdr.ethernet.dstAddr[47:4] == 0x0180c200000) {
            /* link-local control frame: to the control plane */
            standard_metadata.egress_spec = CPU_PORT;
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
            return;
        }
        smac.apply();
        dmac.apply();
        /* never back where it came from (a flood is pruned per copy in
         * egress: its egress_spec is not a port) */
        if (standard_metadata.mcast_grp == 0 &&
            standard_metadata.egress_spec == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

control LearnEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        /* a flooded copy does not go back out of the port it came in on */
        if (standard_metadata.mcast_grp != 0 &&
            standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

control LearnCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control LearnDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
    }
}

V1Switch(LearnParser(), LearnVerify(), LearnIngress(), LearnEgress(),
         LearnCompute(), LearnDeparser()) main;
