/* A PSA mirror that never recirculates, so that at XDP its copies go
 * through the copy machine (psa_mirror.stf; psa_replicate.p4 recirculates
 * and takes the slow path): every packet is multicast to group 1, and
 * cloned I2E (session 2) when its EtherType is 0x88b5, E2E (session 3,
 * from the replica with instance 1) when 0x88b6. Egress writes the
 * egress port, packet_path and instance into the source address. */
#include <core.p4>
#include <psa.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> t; }
struct H { eth_t eth; }
struct M { }
struct empty_t { }

parser IP(packet_in p, out H h, inout M m, in psa_ingress_parser_input_metadata_t istd,
          in empty_t r1, in empty_t r2) {
    state start { p.extract(h.eth); transition accept; }
}

control Ig(inout H h, inout M m, in psa_ingress_input_metadata_t istd, inout psa_ingress_output_metadata_t ostd) {
    apply {
        multicast(ostd, (MulticastGroup_t)1);
        if (h.eth.t == 0x88b5) {
            ostd.clone = true;
            ostd.clone_session_id = (CloneSessionId_t)2;
        }
    }
}

control ID(packet_out p, out empty_t c, out empty_t r, out empty_t n, inout H h, in M m,
           in psa_ingress_output_metadata_t istd) {
    apply { p.emit(h.eth); }
}

parser EP(packet_in p, out H h, inout M m, in psa_egress_parser_input_metadata_t istd,
          in empty_t n, in empty_t c1, in empty_t c2) {
    state start { p.extract(h.eth); transition accept; }
}

control Eg(inout H h, inout M m, in psa_egress_input_metadata_t istd, inout psa_egress_output_metadata_t ostd) {
    apply {
        bit<8> path = 0;
        if (istd.packet_path == PSA_PacketPath_t.NORMAL_MULTICAST) { path = 2; }
        else if (istd.packet_path == PSA_PacketPath_t.CLONE_I2E) { path = 3; }
        else if (istd.packet_path == PSA_PacketPath_t.CLONE_E2E) { path = 4; }
        h.eth.src = (bit<32>)istd.egress_port ++ path ++ (bit<8>)(bit<16>)istd.instance;
        if (h.eth.t == 0x88b6 && istd.packet_path == PSA_PacketPath_t.NORMAL_MULTICAST && istd.instance == (EgressInstance_t)1) {
            ostd.clone = true;
            ostd.clone_session_id = (CloneSessionId_t)3;
        }
    }
}

control ED(packet_out p, out empty_t c, out empty_t r, inout H h, in M m,
           in psa_egress_output_metadata_t istd, in psa_egress_deparser_input_metadata_t edstd) {
    apply { p.emit(h.eth); }
}

IngressPipeline(IP(), Ig(), ID()) ip;
EgressPipeline(EP(), Eg(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
