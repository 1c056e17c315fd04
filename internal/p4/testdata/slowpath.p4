/* Slow path: digests (a typed list and a struct), log_msg with and without
 * values, packet_in / packet_out controller headers, CPU port 255. */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_in")
header packet_in_t { bit<9> ingress_port; bit<7> _pad; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers_t { packet_out_t packet_out; packet_in_t packet_in; ethernet_t ethernet; }
struct learn_t { bit<48> srcAddr; bit<9> ingress_port; }
struct metadata_t { learn_t l; }

parser P(packet_in packet, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) { CPU_PORT: parse_po; default: parse_eth; }
    }
    state parse_po { packet.extract(hdr.packet_out); transition parse_eth; }
    state parse_eth { packet.extract(hdr.ethernet); transition accept; }
}
control V(inout headers_t hdr, inout metadata_t meta) { apply { } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action learn() { digest<learn_t>(1, {hdr.ethernet.srcAddr, sm.ingress_port}); }
    table smac { key = { hdr.ethernet.srcAddr : exact; } actions = { learn; NoAction; } default_action = learn(); }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            log_msg("packet-out to port {}", {hdr.packet_out.egress_port});
            return;
        }
        smac.apply();
        meta.l.srcAddr = hdr.ethernet.dstAddr;
        meta.l.ingress_port = 7;
        digest(2, meta.l);
        log_msg("hello");
        if (hdr.ethernet.etherType == 0x9999) {
            sm.egress_spec = CPU_PORT;
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
        } else {
            sm.egress_spec = 1;
        }
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out packet, in headers_t hdr) { apply { packet.emit(hdr.packet_in); packet.emit(hdr.ethernet); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
