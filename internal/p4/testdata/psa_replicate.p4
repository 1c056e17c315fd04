/* PSA packet replication, checked packet by packet (psa_replicate.stf):
 * multicast groups, I2E and E2E clones through clone sessions, resubmit
 * and recirculate, with the metadata each bridges. The packet: Ethernet
 * (the low byte of the destination is the operation), then four words
 * the program fills:
 *   w0  the ingress port of the last pass (0x11 written by ingress for
 *       the unicast copy of op 3)
 *   w1  the passes the packet made before the last (resubmit_meta or
 *       recirculate_meta)
 *   w2  the egress port and packet_path as egress sees them
 *       (port << 8 | path: NORMAL 0, UNICAST 1, MULTICAST 2, I2E 3,
 *       E2E 4, RESUBMIT 5, RECIRCULATE 6)
 *   w3  the egress instance (multicast) or the tag a clone's metadata
 *       brought (clone_i2e_meta, clone_e2e_meta)
 * Operations: 1 unicast to port 1; 2 multicast group 5; 3 unicast to
 * port 1 and an I2E clone (session 10); 4 resubmit n times (n: the low
 * byte of the source address), then port 2; 5 recirculate n times, then
 * port 3; 6 recirculate for ever;
 * 7 resubmit for ever; 8 unicast to port 1 and an E2E clone (session 11);
 * 9 unicast to port 1 and an I2E clone to a multicast session (12);
 * 10 unicast to port 1 and an E2E clone to a multicast session (13);
 * 11 and 12: ingress invalidates the words, so that the egress parser
 * reads past what the ingress deparser wrote, with multicast (not
 * supported: no copy) and unicast (one copy: fine). */
#include <core.p4>
#include <psa.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> t; }
header data_t { bit<32> w0; bit<32> w1; bit<32> w2; bit<32> w3; }
struct H { eth_t eth; data_t d; }
struct M { bit<32> passes; bit<32> tag; }
struct passes_t { bit<32> n; }
struct tag_t { bit<32> tag; }
struct empty_t { }

parser IP(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t istd,
          in passes_t resub, in passes_t recirc) {
    state start {
        p.extract(h.eth);
        p.extract(h.d);
        transition select(istd.packet_path) {
            PSA_PacketPath_t.RESUBMIT: resubmitted;
            PSA_PacketPath_t.RECIRCULATE: recirculated;
            default: accept;
        }
    }
    state resubmitted { m.passes = resub.n; transition accept; }
    state recirculated { m.passes = recirc.n; transition accept; }
}

control Ig(inout H h, inout M m, in psa_ingress_input_metadata_t istd, inout psa_ingress_output_metadata_t ostd) {
    apply {
        bit<8> op = h.eth.dst[7:0];
        h.d.w0 = (bit<32>)istd.ingress_port;
        h.d.w1 = m.passes;
        if (op == 1) {
            send_to_port(ostd, (PortId_t)1);
        } else if (op == 2) {
            multicast(ostd, (MulticastGroup_t)5);
        } else if (op == 3 || op == 9) {
            send_to_port(ostd, (PortId_t)1);
            h.d.w0 = 0x11; /* the unicast copy's; an I2E clone has the packet as received */
            ostd.clone = true;
            ostd.clone_session_id = op == 3 ? (CloneSessionId_t)10 : (CloneSessionId_t)12;
        } else if (op == 4 || op == 7) {
            if (op == 7 || m.passes < (bit<32>)h.eth.src[7:0]) {
                ostd.resubmit = true;
                ostd.drop = false;
            } else {
                send_to_port(ostd, (PortId_t)2);
            }
        } else if (op == 5 || op == 6) {
            if (op == 6 || m.passes < (bit<32>)h.eth.src[7:0]) {
                send_to_port(ostd, PSA_PORT_RECIRCULATE);
            } else {
                send_to_port(ostd, (PortId_t)3);
            }
        } else if (op == 8 || op == 10) {
            send_to_port(ostd, (PortId_t)1);
        } else if (op == 11 || op == 12) {
            /* the egress parser then reads the words from the payload */
            h.d.setInvalid();
            if (op == 11) {
                multicast(ostd, (MulticastGroup_t)5);
            } else {
                send_to_port(ostd, (PortId_t)1);
            }
        }
    }
}

control ID(packet_out p, out tag_t ci2e, out passes_t resub, out empty_t nm, inout H h, in M m,
           in psa_ingress_output_metadata_t istd) {
    apply {
        if (psa_clone_i2e(istd)) { ci2e.tag = 0x12e; }
        if (psa_resubmit(istd)) { resub.n = m.passes + 1; }
        p.emit(h.eth);
        p.emit(h.d);
    }
}

parser EP(packet_in p, out H h, inout M m, in psa_egress_parser_input_metadata_t istd,
          in empty_t nm, in tag_t ci2e, in tag_t ce2e) {
    state start {
        p.extract(h.eth);
        p.extract(h.d);
        transition select(istd.packet_path) {
            PSA_PacketPath_t.CLONE_I2E: from_i2e;
            PSA_PacketPath_t.CLONE_E2E: from_e2e;
            default: accept;
        }
    }
    state from_i2e { m.tag = ci2e.tag; transition accept; }
    state from_e2e { m.tag = ce2e.tag; transition accept; }
}

control Eg(inout H h, inout M m, in psa_egress_input_metadata_t istd, inout psa_egress_output_metadata_t ostd) {
    apply {
        bit<32> path = 0;
        if (istd.packet_path == PSA_PacketPath_t.NORMAL_UNICAST) { path = 1; }
        else if (istd.packet_path == PSA_PacketPath_t.NORMAL_MULTICAST) { path = 2; }
        else if (istd.packet_path == PSA_PacketPath_t.CLONE_I2E) { path = 3; }
        else if (istd.packet_path == PSA_PacketPath_t.CLONE_E2E) { path = 4; }
        h.d.w2 = (bit<32>)istd.egress_port << 8 | path;
        if (istd.packet_path == PSA_PacketPath_t.NORMAL_MULTICAST) {
            h.d.w3 = (bit<32>)istd.instance;
        } else {
            h.d.w3 = m.tag;
        }
        if ((h.eth.dst[7:0] == 8 || h.eth.dst[7:0] == 10) && istd.packet_path == PSA_PacketPath_t.NORMAL_UNICAST) {
            ostd.clone = true;
            ostd.clone_session_id = h.eth.dst[7:0] == 8 ? (CloneSessionId_t)11 : (CloneSessionId_t)13;
        }
    }
}

control ED(packet_out p, out tag_t ce2e, out passes_t recirc, inout H h, in M m,
           in psa_egress_output_metadata_t istd, in psa_egress_deparser_input_metadata_t edstd) {
    apply {
        if (psa_clone_e2e(istd)) { ce2e.tag = 0xe2e; }
        if (psa_recirculate(istd, edstd)) { recirc.n = h.d.w1 + 1; }
        p.emit(h.eth);
        p.emit(h.d);
    }
}

IngressPipeline(IP(), Ig(), ID()) ip;
EgressPipeline(EP(), Eg(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
