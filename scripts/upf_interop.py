#!/usr/bin/env python3
"""Drives edgenf's PFCP agent with scapy's PFCP layer (scapy.contrib.pfcp,
an implementation written elsewhere) as an SMF would: heartbeat,
association, a session with several PDRs, FARs, QERs and URRs,
modification (tunnel switch with an End Marker, gate, new and removed
rules, query), the periodic usage report, deletion with its final reports,
errors, an association update preparing the release (EPFAR: the final usage
reports come in Session Report Requests), association release. Every response's cause and IEs are checked.

Usage: upf_interop.py UPF_ADDR:PORT GNB_ADDR
Exits 0 when everything the UPF said is right, 1 with the first problem.
"""
import socket
import sys
import time

from scapy.contrib.pfcp import (
    PFCP, IE_ApplyAction, IE_Cause, IE_CreatedPDR, IE_CreateFAR, IE_CreatePDR, IE_CreateQER,
    IE_CreateURR, IE_DestinationInterface, IE_FAR_Id, IE_ForwardingParameters, IE_FSEID, IE_FTEID,
    IE_CPFunctionFeatures, IE_GateStatus, IE_MBR, IE_NotImplemented, IE_MeasurementMethod, IE_MeasurementPeriod, IE_NodeId, IE_OffendingIE,
    IE_OuterHeaderCreation, IE_OuterHeaderRemoval, IE_PDI, IE_PDR_Id, IE_PFCPSMReqFlags,
    IE_Precedence, IE_QER_Id, IE_QFI, IE_QueryURR, IE_RecoveryTimeStamp, IE_RemovePDR,
    IE_ReportingTriggers, IE_ReportType, IE_SDF_Filter, IE_SourceInterface, IE_UE_IP_Address,
    IE_UPFunctionFeatures, IE_UpdateFAR, IE_UpdateForwardingParameters, IE_UpdateQER,
    IE_URR_Id, IE_UsageReport_SDR, IE_UsageReport_SMR, IE_UsageReport_SRR,
    IE_UsageReportTrigger, IE_VolumeMeasurement, IE_VolumeThreshold,
    PFCPAssociationReleaseRequest, PFCPAssociationSetupRequest, PFCPAssociationUpdateRequest,
    PFCPHeartbeatRequest,
    PFCPSessionDeletionRequest, PFCPSessionEstablishmentRequest,
    PFCPSessionModificationRequest, PFCPSessionReportResponse,
)

NTP = 2208988800


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class SMF:
    def __init__(self, upf):
        host, port = upf.rsplit(":", 1)
        self.upf = (host, int(port))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.2", 0))  # not the address of other SMFs on loopback
        self.sock.settimeout(5)
        self.addr = self.sock.getsockname()[0]
        self.seq = 100
        self.recovery = int(time.time()) + NTP
        self.reports = []

    def request(self, body, seid=None):
        self.seq += 1
        hdr = PFCP(version=1, S=0 if seid is None else 1, seq=self.seq)
        if seid is not None:
            hdr.seid = seid
        self.sock.sendto(bytes(hdr / body), self.upf)
        deadline = time.time() + 5
        while time.time() < deadline:
            data, _ = self.sock.recvfrom(65535)
            msg = PFCP(data)
            if msg.message_type == 56:  # a Session Report Request meanwhile
                self.answer_report(msg)
                continue
            if msg.seq == self.seq:
                return msg
        raise Failure("no response to %s" % body.name)

    def answer_report(self, msg):
        self.reports.append(msg)
        resp = PFCP(version=1, S=1, seid=msg.seid, seq=msg.seq) / PFCPSessionReportResponse(
            IE_list=[IE_Cause(cause=1)])
        self.sock.sendto(bytes(resp), self.upf)

    def wait_report(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline and not self.reports:
            try:
                data, _ = self.sock.recvfrom(65535)
            except socket.timeout:
                break
            msg = PFCP(data)
            if msg.message_type == 56:
                self.answer_report(msg)
        check(self.reports, "no Session Report Request")
        return self.reports.pop(0)


def ies(msg, cls):
    return [ie for ie in msg.payload.IE_list if isinstance(ie, cls)]


def one(msg, cls):
    found = ies(msg, cls)
    check(len(found) == 1, "%s: %d %s, want 1" % (msg.payload.name, len(found), cls.name))
    return found[0]


def cause(msg):
    return one(msg, IE_Cause).cause


def accepted(msg):
    c = cause(msg)
    check(c == 1, "%s: cause %d, want 1 (accepted)" % (msg.payload.name, c))


def children(ie, cls):
    return [x for x in ie.IE_list if isinstance(x, cls)]


def main():
    upf, gnb = sys.argv[1], sys.argv[2]
    smf = SMF(upf)

    # Heartbeat: the UPF's recovery time stamp.
    r = smf.request(PFCPHeartbeatRequest(IE_list=[IE_RecoveryTimeStamp(timestamp=smf.recovery)]))
    check(r.message_type == 2, "heartbeat: message type %d" % r.message_type)
    rts = one(r, IE_RecoveryTimeStamp).timestamp

    # Association.
    node = IE_NodeId(id_type=0, ipv4=smf.addr)
    r = smf.request(PFCPAssociationSetupRequest(IE_list=[node, IE_RecoveryTimeStamp(timestamp=smf.recovery)]))
    accepted(r)
    check(one(r, IE_RecoveryTimeStamp).timestamp == rts, "association: another recovery time stamp")
    feat = one(r, IE_UPFunctionFeatures)
    check(feat.FTUP == 1, "the UPF does not say it allocates F-TEIDs (FTUP)")
    check(feat.BUCP == 0 and feat.PFDM == 0, "the UPF advertises features it lacks")
    one(r, IE_NodeId)

    # Establishment: an uplink PDR on a tunnel the UPF chooses, two
    # downlink PDRs (one for UDP from port 5000, steered to its own
    # tunnel), their FARs, two QERs, two URRs.
    cp_seid = 0x51
    ue = "198.19.5.5"
    est = PFCPSessionEstablishmentRequest(IE_list=[
        node,
        IE_FSEID(v4=1, seid=cp_seid, ipv4=smf.addr),
        IE_CreatePDR(IE_list=[
            IE_PDR_Id(id=1), IE_Precedence(precedence=200),
            IE_PDI(IE_list=[IE_SourceInterface(interface=0), IE_FTEID(V4=1, CH=1, CHID=1, choose_id=1),
                            IE_UE_IP_Address(V4=1, ipv4=ue), IE_QFI(QFI=9)]),
            IE_OuterHeaderRemoval(header=0), IE_FAR_Id(id=1), IE_URR_Id(id=1), IE_QER_Id(id=1)]),
        IE_CreatePDR(IE_list=[
            IE_PDR_Id(id=2), IE_Precedence(precedence=200),
            IE_PDI(IE_list=[IE_SourceInterface(interface=1), IE_UE_IP_Address(V4=1, SD=1, ipv4=ue)]),
            IE_FAR_Id(id=2), IE_URR_Id(id=1), IE_URR_Id(id=2), IE_QER_Id(id=1)]),
        IE_CreatePDR(IE_list=[
            IE_PDR_Id(id=3), IE_Precedence(precedence=100),
            IE_PDI(IE_list=[IE_SourceInterface(interface=1), IE_UE_IP_Address(V4=1, SD=1, ipv4=ue),
                            IE_SDF_Filter(FD=1, flow_description="permit out 17 from any 5000 to assigned")]),
            IE_FAR_Id(id=3), IE_QER_Id(id=2)]),
        IE_CreateFAR(IE_list=[IE_FAR_Id(id=1), IE_ApplyAction(FORW=1),
                              IE_ForwardingParameters(IE_list=[IE_DestinationInterface(interface=1)])]),
        IE_CreateFAR(IE_list=[IE_FAR_Id(id=2), IE_ApplyAction(FORW=1),
                              IE_ForwardingParameters(IE_list=[
                                  IE_DestinationInterface(interface=0),
                                  IE_OuterHeaderCreation(GTPUUDPIPV4=1, TEID=0x9001, ipv4=gnb)])]),
        IE_CreateFAR(IE_list=[IE_FAR_Id(id=3), IE_ApplyAction(FORW=1),
                              IE_ForwardingParameters(IE_list=[
                                  IE_DestinationInterface(interface=0),
                                  IE_OuterHeaderCreation(GTPUUDPIPV4=1, TEID=0x9002, ipv4=gnb)])]),
        IE_CreateQER(IE_list=[IE_QER_Id(id=1), IE_GateStatus(), IE_MBR(ul=100000, dl=200000), IE_QFI(QFI=9)]),
        IE_CreateQER(IE_list=[IE_QER_Id(id=2), IE_GateStatus(), IE_QFI(QFI=5)]),
        IE_CreateURR(IE_list=[IE_URR_Id(id=1), IE_MeasurementMethod(VOLUM=1),
                              IE_ReportingTriggers(volume_threshold=1),
                              IE_VolumeThreshold(TOVOL=1, total=10 ** 9)]),
        IE_CreateURR(IE_list=[IE_URR_Id(id=2), IE_MeasurementMethod(VOLUM=1, DURAT=1),
                              IE_ReportingTriggers(periodic_reporting=1), IE_MeasurementPeriod(period=1)]),
    ])
    r = smf.request(est, seid=0)
    accepted(r)
    check(r.seid == cp_seid, "establishment response to SEID %#x, want the SMF's %#x" % (r.seid, cp_seid))
    up = one(r, IE_FSEID)
    check(up.v4 == 1 and up.seid != 0, "no UP F-SEID")
    created = ies(r, IE_CreatedPDR)
    check(len(created) == 1, "%d Created PDRs, want 1 (the chosen tunnel)" % len(created))
    f = children(created[0], IE_FTEID)
    check(children(created[0], IE_PDR_Id)[0].id == 1 and len(f) == 1 and f[0].V4 == 1 and f[0].CH == 0 and f[0].TEID != 0,
          "Created PDR without a chosen F-TEID")
    up_seid = up.seid
    # The UPF chooses from the upper half of its TEID range (the lab's is
    # the default, 1-0xffffffff), and refuses an SMF's TEID from it.
    check(f[0].TEID >= 0x80000001, "chosen TEID %#x below the chosen range" % f[0].TEID)
    r = smf.request(PFCPSessionEstablishmentRequest(IE_list=[
        node,
        IE_FSEID(v4=1, seid=0x50, ipv4=smf.addr),
        IE_CreatePDR(IE_list=[
            IE_PDR_Id(id=1), IE_Precedence(precedence=200),
            IE_PDI(IE_list=[IE_SourceInterface(interface=0), IE_FTEID(V4=1, TEID=0x80000100, ipv4="198.18.1.1")]),
            IE_OuterHeaderRemoval(header=0), IE_FAR_Id(id=1)]),
        IE_CreateFAR(IE_list=[IE_FAR_Id(id=1), IE_ApplyAction(FORW=1),
                              IE_ForwardingParameters(IE_list=[IE_DestinationInterface(interface=1)])]),
    ]), seid=0)
    check(cause(r) == 73 and one(r, IE_OffendingIE).type == 21,
          "an SMF's TEID in the chosen range: cause %d, want 73 naming IE 21" % cause(r))

    # Modification: the gNB's tunnel moves (End Marker on the old one),
    # the video flow's gate closes uplink, PDR 3 goes, URR 1 is queried.
    mod = PFCPSessionModificationRequest(IE_list=[
        IE_UpdateFAR(IE_list=[IE_FAR_Id(id=2), IE_ApplyAction(FORW=1),
                              IE_UpdateForwardingParameters(IE_list=[
                                  IE_DestinationInterface(interface=0),
                                  IE_OuterHeaderCreation(GTPUUDPIPV4=1, TEID=0x9101, ipv4=gnb),
                                  IE_PFCPSMReqFlags(SNDEM=1)])]),
        IE_UpdateQER(IE_list=[IE_QER_Id(id=2), IE_GateStatus(ul="CLOSED")]),
        IE_RemovePDR(IE_list=[IE_PDR_Id(id=3)]),
        IE_QueryURR(IE_list=[IE_URR_Id(id=1)]),
    ])
    r = smf.request(mod, seid=up_seid)
    accepted(r)
    check(r.seid == cp_seid, "modification response to SEID %#x" % r.seid)
    reps = ies(r, IE_UsageReport_SMR)
    check(len(reps) == 1 and children(reps[0], IE_URR_Id)[0].id == 1, "query URR: %d usage reports" % len(reps))
    check(len(children(reps[0], IE_UsageReportTrigger)) == 1 and len(children(reps[0], IE_VolumeMeasurement)) == 1,
          "usage report without trigger or volume")

    # The periodic URR reports by itself.
    rep = smf.wait_report(6)
    check(rep.seid == cp_seid, "report to SEID %#x" % rep.seid)
    check(one(rep, IE_ReportType).USAR == 1, "report type is not USAR")
    u = one(rep, IE_UsageReport_SRR)
    check(children(u, IE_URR_Id)[0].id == 2 and children(u, IE_UsageReportTrigger)[0].PERIO == 1,
          "the periodic report is not URR 2's PERIO")

    # Errors: an unknown session, a missing F-SEID.
    r = smf.request(PFCPSessionDeletionRequest(), seid=0xdeadbeef)
    check(cause(r) == 65, "deletion of an unknown session: cause %d, want 65" % cause(r))
    r = smf.request(PFCPSessionEstablishmentRequest(IE_list=[node]), seid=0)
    check(cause(r) == 66 and one(r, IE_OffendingIE).type == 57,
          "establishment without F-SEID: cause %d, want 66 naming IE 57" % cause(r))

    # Deletion: the final reports of both URRs.
    r = smf.request(PFCPSessionDeletionRequest(), seid=up_seid)
    accepted(r)
    reps = ies(r, IE_UsageReport_SDR)
    check(sorted(children(x, IE_URR_Id)[0].id for x in reps) == [1, 2], "deletion: usage reports %s" % reps)

    # Association update: the SMF says it supports EPFAR (CP Function
    # Features octet 5 bit 3, a spare bit to this scapy), then that it will
    # release the association (PFCPAUReq-Flags, IE 162, PARPS: unknown to
    # this scapy). The UPF sends the session's final usage report (trigger
    # TEBUR, octet 7 bit 2; PFCPSRReq-Flags, IE 161, PSDBU) and deletes it.
    smf.reports = []  # the periodic reports of the session deleted above
    cp_seid = 0x52
    est = PFCPSessionEstablishmentRequest(IE_list=[
        node,
        IE_FSEID(v4=1, seid=cp_seid, ipv4=smf.addr),
        IE_CreatePDR(IE_list=[
            IE_PDR_Id(id=1), IE_Precedence(precedence=200),
            IE_PDI(IE_list=[IE_SourceInterface(interface=0), IE_FTEID(V4=1, CH=1)]),
            IE_OuterHeaderRemoval(header=0), IE_FAR_Id(id=1), IE_URR_Id(id=1)]),
        IE_CreateFAR(IE_list=[IE_FAR_Id(id=1), IE_ApplyAction(FORW=1),
                              IE_ForwardingParameters(IE_list=[IE_DestinationInterface(interface=1)])]),
        IE_CreateURR(IE_list=[IE_URR_Id(id=1), IE_MeasurementMethod(DURAT=1),
                              IE_ReportingTriggers(periodic_reporting=1), IE_MeasurementPeriod(period=3600)]),
    ])
    r = smf.request(est, seid=0)
    accepted(r)
    up_seid = one(r, IE_FSEID).seid
    time.sleep(1.1)  # a duration of at least a second to report
    r = smf.request(PFCPAssociationUpdateRequest(IE_list=[node, IE_CPFunctionFeatures(spare=1)]))
    accepted(r)
    check(one(r, IE_UPFunctionFeatures).spare == 1, "the UPF does not advertise EPFAR")
    r = smf.request(PFCPAssociationUpdateRequest(IE_list=[node, IE_NotImplemented(ietype=162, data=b"\x01")]))
    accepted(r)
    rep = smf.wait_report(5)
    check(rep.seid == cp_seid, "final report to SEID %#x" % rep.seid)
    check(one(rep, IE_ReportType).USAR == 1, "final report: type is not USAR")
    u = one(rep, IE_UsageReport_SRR)
    trig = children(u, IE_UsageReportTrigger)[0]
    check(len(trig.extra_data) >= 1 and trig.extra_data[0] & 0x02, "final report: trigger is not TEBUR")
    flags = [ie for ie in rep.payload.IE_list if ie.ietype == 161]
    check(len(flags) == 1 and bytes(flags[0])[4] & 0x01, "final report: no PSDBU")
    r = smf.request(PFCPSessionDeletionRequest(), seid=up_seid)
    check(cause(r) == 65, "the reported session is still there: deletion cause %d" % cause(r))

    r = smf.request(PFCPAssociationReleaseRequest(IE_list=[node]))
    accepted(r)
    print("interop: OK")


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print("interop: FAILED:", e)
        sys.exit(1)
