package agent

import (
	"net/netip"

	"github.com/edgenf/edgenf/internal/pfcp"
)

// Session reports (TS 29.244 clause 6.3.6): what the datapath noticed goes
// to the session's SMF in a Session Report Request, retransmitted until
// answered.

// report sends the Session Report Request for one event.
func (a *Agent) report(ev Event) {
	s, err := a.readSession(ev.SEID)
	if err != nil || s == nil || s.CPAddress == "" {
		a.dropReport()
		return
	}
	as := a.associated(s.Node)
	if as == nil || !as.peer.IsValid() {
		a.dropReport()
		return
	}
	m := &pfcp.Message{Type: pfcp.SessionReportRequest, HasSEID: true, SEID: s.CPSEID}
	switch ev.Kind {
	case EventUsage:
		m.IEs = pfcp.IEs{pfcp.U8IE(pfcp.IEReportType, pfcp.ReportUSAR)}
		for _, u := range ev.Usage {
			m.IEs = append(m.IEs, usageIE(pfcp.IEUsageReportSRR, u))
		}
	case EventDownlinkData:
		dr := pfcp.Group(pfcp.IEDownlinkDataReport, pfcp.U16IE(pfcp.IEPDRID, ev.PDR))
		if ev.QFI != 0 {
			// Downlink Data Service Information: QFII set, then the QFI.
			dr.Children = append(dr.Children, pfcp.NewIE(pfcp.IEDownlinkDataServiceInformation, []byte{0x02, ev.QFI & 0x3f}))
		}
		m.IEs = pfcp.IEs{pfcp.U8IE(pfcp.IEReportType, pfcp.ReportDLDR), dr}
	case EventErrorIndication:
		peer, err := netip.ParseAddr(ev.Tunnel.Address)
		if err != nil {
			return
		}
		f := pfcp.FTEID{TEID: ev.Tunnel.TEID}
		if peer.Is4() {
			f.IPv4 = peer
		} else {
			f.IPv6 = peer
		}
		m.IEs = pfcp.IEs{pfcp.U8IE(pfcp.IEReportType, pfcp.ReportERIR), pfcp.Group(pfcp.IEErrorIndicationReport, f.IE())}
	default:
		return
	}
	seid := ev.SEID
	a.ask(as.peer, m, func(resp *pfcp.Message) {
		if resp == nil {
			a.logf("PFCP: the SMF %s did not answer the report of session %d", s.Node, seid)
			return
		}
		ie := resp.IEs.Find(pfcp.IECause)
		if ie == nil || len(ie.Value) == 0 {
			return
		}
		if c := pfcp.Cause(ie.Value[0]); !c.Accepted() {
			a.logf("PFCP: the SMF refused the report of session %d: %s", seid, c)
		}
		// Drop buffered packets when the SMF says so (DROBU).
		if fl := resp.IEs.Find(pfcp.IEPFCPSRRspFlags); fl != nil && fl.Flags()&0x01 != 0 {
			a.dp.DropBuffered(seid)
		}
	})
}

func (a *Agent) dropReport() {
	a.mu.Lock()
	a.stats.ReportsDropped++
	a.mu.Unlock()
}
