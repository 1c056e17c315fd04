package agent

import (
	"net/netip"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp"
)

// Association updates (TS 29.244 clause 6.2.7) both ways, and the release
// of associations they prepare (clause 5.18, Enhanced PFCP Association
// Release, and 6.2.8.3, a release the UP function asks for).
//
// From the SMF: new CP Function Features are stored; the PARPS flag says
// the SMF will release the association, and the UPF sends the final
// non-zero usage reports of the SMF's sessions, deleting them (5.18.2).
//
// From the UPF, when its settings say drain: to an SMF with EPFAR, an
// Update Request with PARPS, the final reports as above, then an Update
// Request asking for the release (SARR) saying the reports were sent
// (URSS); to one without, the release request with the Graceful Release
// Period of the settings. The SMF then deletes the sessions left and
// releases the association (associationRelease). A draining UPF accepts
// neither associations nor sessions.

func (a *Agent) associationUpdate(from netip.AddrPort, m *pfcp.Message) {
	node, _ := nodeOf(m)
	key := node.String()
	a.mu.Lock()
	as, ok := a.assoc[key]
	var stored model.Association
	if ok {
		stored = as.Association
	}
	a.mu.Unlock()
	if !ok {
		a.answer(from, m, pfcp.CauseNoAssociation)
		return
	}
	a.heard(from)
	if ie := m.IEs.Find(pfcp.IECPFunctionFeatures); ie != nil && ie.Flags() != stored.Features {
		stored.Features = ie.Flags()
		if err := a.putAssociation(stored); err != nil {
			a.logf("PFCP association update of %s: %v", key, err)
			a.answer(from, m, pfcp.CauseNoResources)
			return
		}
		a.mu.Lock()
		as.Features = stored.Features
		a.mu.Unlock()
	}
	a.answer(from, m, pfcp.CauseAccepted, pfcp.FeaturesIE(Features))
	if ie := m.IEs.Find(pfcp.IEPFCPAUReqFlags); ie != nil && ie.Flags()&pfcp.FlagPARPS != 0 {
		a.logf("PFCP: SMF %s prepares to release the association; sending the final usage reports", key)
		a.finalReports(key)
	}
}

// finalReports sends the final non-zero usage reports of an SMF's
// sessions, one Session Report Request per session (usage report trigger
// TEBUR, flag PSDBU), and deletes those sessions (clause 5.18.2).
// Sessions without usage to report stay for the SMF to delete or release.
func (a *Agent) finalReports(node string) int {
	as := a.associated(node)
	if as == nil {
		return 0
	}
	var gone []uint64
	for _, seid := range a.dp.SessionsOf(node) {
		s, err := a.readSession(seid)
		if err != nil || s == nil {
			continue
		}
		var reps []Usage
		for _, u := range a.dp.Usage(seid, nil, pfcp.UsageTEBUR) {
			if used(u) {
				reps = append(reps, u)
			}
		}
		if len(reps) == 0 {
			continue
		}
		m := &pfcp.Message{Type: pfcp.SessionReportRequest, HasSEID: true, SEID: s.CPSEID,
			IEs: pfcp.IEs{pfcp.U8IE(pfcp.IEReportType, pfcp.ReportUSAR)}}
		for _, u := range reps {
			m.IEs = append(m.IEs, usageIE(pfcp.IEUsageReportSRR, u))
		}
		m.IEs = append(m.IEs, pfcp.FlagsIE(pfcp.IEPFCPSRReqFlags, pfcp.FlagPSDBU, 1))
		seid := seid
		a.ask(as.peer, m, func(resp *pfcp.Message) {
			if resp == nil {
				a.logf("PFCP: the SMF %s did not answer the final report of session %d", node, seid)
			}
		})
		gone = append(gone, seid)
	}
	if len(gone) == 0 {
		return 0
	}
	err := a.store.ChangeEntries("sessions", func(tx cube.EntryTx) error {
		for _, s := range gone {
			if err := tx.Delete(model.SessionKey(s)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		a.logf("PFCP: deleting the reported sessions of %s: %v", node, err)
		return 0
	}
	a.logf("PFCP: reported and deleted %d sessions of %s", len(gone), node)
	return len(gone)
}

// used reports whether a usage report measured anything.
func used(u Usage) bool {
	if v := u.Volume; v != nil && v.ULBytes+v.DLBytes+v.ULPkts+v.DLPkts != 0 {
		return true
	}
	return u.Duration != nil && *u.Duration != 0
}

// syncDrain starts the release of every association when the settings
// turned drain on, and accepts associations again when they turned it off
// (a release already asked for stands: the SMF decides).
func (a *Agent) syncDrain() {
	a.mu.Lock()
	want := a.cfg.Settings.PFCP != nil && a.cfg.Settings.PFCP.Drain
	start := want && !a.draining
	a.draining = want
	a.mu.Unlock()
	if start {
		go a.drain()
	}
}

// drain asks each associated SMF to release its association.
func (a *Agent) drain() {
	a.mu.Lock()
	var todo []*association
	for _, as := range a.assoc {
		if !as.releasing && as.peer.IsValid() {
			as.releasing = true
			todo = append(todo, as)
		}
	}
	period := time.Duration(a.cfg.Settings.PFCP.GracefulReleaseSeconds) * time.Second
	a.mu.Unlock()
	for _, as := range todo {
		a.askRelease(as, period)
	}
}

// askRelease asks one SMF to release its association, with the final
// usage reports first when it supports EPFAR.
func (a *Agent) askRelease(as *association, period time.Duration) {
	a.mu.Lock()
	epfar := as.Features&pfcp.CPFeatureEPFAR != 0
	a.mu.Unlock()
	if !epfar {
		a.requestRelease(as, period, false)
		return
	}
	prep := &pfcp.Message{Type: pfcp.AssociationUpdateRequest,
		IEs: pfcp.IEs{a.ownNodeID().IE(), pfcp.FlagsIE(pfcp.IEPFCPAUReqFlags, pfcp.FlagPARPS, 1)}}
	a.ask(as.peer, prep, func(resp *pfcp.Message) {
		if resp == nil || causeOf(resp) != pfcp.CauseAccepted {
			// The SMF does not take part: ask for the release the
			// plain way.
			a.logf("PFCP: SMF %s did not accept the release preparation; asking for the release", as.Node)
			a.requestRelease(as, period, false)
			return
		}
		a.finalReports(as.Node)
		a.requestRelease(as, 0, true)
	})
}

// requestRelease sends the Association Update Request asking the SMF to
// release the association (SARR), saying whether the final usage reports
// were sent (URSS), with a graceful release period if not zero.
func (a *Agent) requestRelease(as *association, period time.Duration, sent bool) {
	fl := pfcp.FlagSARR
	if sent {
		fl |= pfcp.FlagURSS
	}
	ies := pfcp.IEs{a.ownNodeID().IE(), pfcp.FlagsIE(pfcp.IEAssociationReleaseRequest, fl, 1)}
	if period > 0 {
		ies = append(ies, pfcp.TimerIE(pfcp.IEGracefulReleasePeriod, period))
	}
	a.ask(as.peer, &pfcp.Message{Type: pfcp.AssociationUpdateRequest, IEs: ies}, func(resp *pfcp.Message) {
		switch {
		case resp == nil:
			a.logf("PFCP: SMF %s did not answer the request to release the association", as.Node)
		case causeOf(resp) != pfcp.CauseAccepted:
			a.logf("PFCP: SMF %s refused to release the association: %s", as.Node, causeOf(resp))
		default:
			a.logf("PFCP: SMF %s asked to release the association", as.Node)
		}
	})
}

func causeOf(m *pfcp.Message) pfcp.Cause {
	if ie := m.IEs.Find(pfcp.IECause); ie != nil && len(ie.Value) > 0 {
		return pfcp.Cause(ie.Value[0])
	}
	return 0
}

// ownNodeID is the UPF's Node ID.
func (a *Agent) ownNodeID() pfcp.NodeID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeID
}

func (a *Agent) isDraining() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.draining
}
