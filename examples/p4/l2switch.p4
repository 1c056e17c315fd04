/* l2switch: forward by destination MAC (exact match table), drop unknown
 * unicast, send broadcast to the CPU port (510) for the slow path, count
 * table hits with a direct counter. VLAN tags are parsed and kept. */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_addr_t;
const bit<16> TYPE_VLAN = 0x8100;
#define CPU_PORT 510

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
    vlan_t     vlan;
}

struct metadata_t {
    bit<12> vid;
}

parser SwParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_VLAN: parse_vlan;
            default: accept;
        }
    }
    state parse_vlan {
        packet.extract(hdr.vlan);
        meta.vid = hdr.vlan.vid;
        transition accept;
    }
}

control SwVerify(inout headers_t hdr, inout metadata_t meta) { apply { } }

control SwIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) dmac_hits;

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    @name("mac_table")
    table dmac {
        key = {
            meta.vid           : exact @name("vid");
            hdr.ethernet.dstAddr : exact @name("dst");
        }
        actions = { forward; drop; @defaultonly NoAction; }
        const default_action = drop();
        counters = dmac_hits;
        size = 4096;
    }

    apply {
        if (hdr.ethernet.dstAddr == 0xffffffffffff) {
            to_cpu();
            return;
        }
        dmac.apply();
        if (standard_metadata.egress_spec == standard_metadata.ingress_port) {
            drop(); /* never hairpin */
        }
    }
}

control SwEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) { apply { } }

control SwCompute(inout headers_t hdr, inout metadata_t meta) { apply { } }

control SwDeparser(packet_out packet, in headers_t hdr) {
    apply { packet.emit(hdr); }
}

V1Switch(SwParser(), SwVerify(), SwIngress(), SwEgress(), SwCompute(), SwDeparser()) main;
