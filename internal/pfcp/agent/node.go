package agent

import (
	"encoding/json"
	"net/netip"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp"
)

// Node procedures (TS 29.244 clause 6.2): heartbeats and associations.

// Features are the UP Function Features the UPF advertises: the ones it
// implements.
const Features = pfcp.FeatureFTUP | // allocates F-TEIDs (CHOOSE)
	pfcp.FeatureEMPU | // sends End Markers when asked (SNDEM)
	pfcp.FeatureUEIP | // allocates UE addresses (CHOOSE)
	pfcp.FeatureIP6PL | // takes IPv6 prefix lengths in UE IP Address
	pfcp.FeatureEPFAR // Enhanced PFCP Association Release, both ways (release.go)

// association is the state of one SMF's association.
type association struct {
	model.Association
	peer     netip.AddrPort
	recovery time.Time
	// heartbeat bookkeeping: when one was last answered or sent.
	heard   time.Time
	asked   time.Time
	waiting bool
	// lost: heartbeats went unanswered after every retransmission.
	lost bool
	// releasing: the UPF, draining, asked the SMF to release the
	// association.
	releasing bool
}

func restoreAssociation(m model.Association) *association {
	a := &association{Association: m, heard: time.Now()}
	a.peer, _ = netip.ParseAddrPort(m.Address)
	a.recovery, _ = time.Parse(time.RFC3339, m.RecoveryTime)
	return a
}

// AssociationStatus is an association as the view shows it.
type AssociationStatus struct {
	model.Association
	Sessions      int    `json:"sessions"`
	LastHeartbeat string `json:"last_heartbeat,omitempty"`
	State         string `json:"state"` // up, lost, releasing
}

// Associations lists the associations.
func (a *Agent) Associations() []AssociationStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []AssociationStatus{}
	for _, as := range a.assoc {
		st := AssociationStatus{Association: as.Association, State: "up"}
		if as.lost {
			st.State = "lost"
		} else if as.releasing {
			st.State = "releasing"
		}
		if !as.heard.IsZero() {
			st.LastHeartbeat = as.heard.UTC().Format(time.RFC3339)
		}
		out = append(out, st)
	}
	return out
}

func (a *Agent) node(from netip.AddrPort, m *pfcp.Message) {
	switch m.Type {
	case pfcp.HeartbeatRequest:
		a.heard(from)
		a.cache.put(from, m.Seq, a.sendMsg(from, m.Response(pfcp.TimeIE(pfcp.IERecoveryTimeStamp, a.recovery()))))
	case pfcp.AssociationSetupRequest:
		a.associationSetup(from, m)
	case pfcp.AssociationUpdateRequest:
		a.associationUpdate(from, m)
	case pfcp.AssociationReleaseRequest:
		a.associationRelease(from, m)
	default:
		// PFD management, session sets, node reports: features the UPF
		// does not advertise.
		resp := m.Response(pfcp.CauseIE(pfcp.CauseServiceNotSupported))
		a.withNodeID(resp)
		a.cache.put(from, m.Seq, a.sendMsg(from, resp))
	}
}

// answer sends a node response with the UPF's Node ID and a cause.
func (a *Agent) answer(from netip.AddrPort, req *pfcp.Message, cause pfcp.Cause, ies ...*pfcp.IE) {
	resp := req.Response(append(pfcp.IEs{pfcp.CauseIE(cause)}, ies...)...)
	a.withNodeID(resp)
	a.cache.put(from, req.Seq, a.sendMsg(from, resp))
}

func nodeOf(m *pfcp.Message) (pfcp.NodeID, error) {
	return pfcp.ParseNodeID(m.IEs.Find(pfcp.IENodeID).Value)
}

func (a *Agent) associationSetup(from netip.AddrPort, m *pfcp.Message) {
	node, _ := nodeOf(m)
	rts, _ := m.IEs.Find(pfcp.IERecoveryTimeStamp).Time()
	var cpFeatures uint32
	if ie := m.IEs.Find(pfcp.IECPFunctionFeatures); ie != nil {
		cpFeatures = ie.Flags()
	}
	key := node.String()
	a.mu.Lock()
	old, draining := a.assoc[key], a.draining
	a.mu.Unlock()
	if draining {
		// (an SMF already associated that restarted is refused too: its
		// sessions are deleted when it releases or its heartbeat shows
		// the new recovery time)
		a.answer(from, m, pfcp.CauseRejected, pfcp.TimeIE(pfcp.IERecoveryTimeStamp, a.recovery()))
		return
	}
	// An SMF that restarted (a new recovery time) lost its sessions: the
	// UPF deletes them (TS 29.244 6.2.6.2.2).
	if old != nil && !old.recovery.Equal(rts) {
		a.deleteSessionsOf(key)
	}
	as := model.Association{Node: key, Address: from.String(), RecoveryTime: rts.UTC().Format(time.RFC3339),
		Features: cpFeatures, Since: time.Now().UTC().Format(time.RFC3339)}
	if old != nil && old.recovery.Equal(rts) {
		as.Since = old.Since
	}
	if err := a.putAssociation(as); err != nil {
		a.logf("PFCP association with %s: %v", key, err)
		a.answer(from, m, pfcp.CauseNoResources, pfcp.TimeIE(pfcp.IERecoveryTimeStamp, a.recovery()))
		return
	}
	st := restoreAssociation(as)
	st.peer = from
	a.mu.Lock()
	a.assoc[key] = st
	a.mu.Unlock()
	a.logf("PFCP association with %s (%s) set up", key, from)
	a.answer(from, m, pfcp.CauseAccepted, pfcp.TimeIE(pfcp.IERecoveryTimeStamp, a.recovery()), pfcp.FeaturesIE(Features))
}

func (a *Agent) putAssociation(as model.Association) error {
	raw, err := json.Marshal(as)
	if err != nil {
		return err
	}
	return a.store.ChangeEntries("associations", func(tx cube.EntryTx) error {
		_, err := tx.Put(raw)
		return err
	})
}

func (a *Agent) associationRelease(from netip.AddrPort, m *pfcp.Message) {
	node, _ := nodeOf(m)
	key := node.String()
	a.mu.Lock()
	_, ok := a.assoc[key]
	a.mu.Unlock()
	if !ok {
		a.answer(from, m, pfcp.CauseNoAssociation)
		return
	}
	// The UPF deletes the association's sessions (TS 29.244 6.2.8.2.2).
	a.deleteSessionsOf(key)
	if err := a.store.ChangeEntries("associations", func(tx cube.EntryTx) error { return tx.Delete(key) }); err != nil {
		a.logf("PFCP association release of %s: %v", key, err)
	}
	a.mu.Lock()
	delete(a.assoc, key)
	a.mu.Unlock()
	a.logf("PFCP association with %s released", key)
	a.answer(from, m, pfcp.CauseAccepted)
}

// deleteSessionsOf deletes the sessions an SMF controls, without reports:
// the SMF is gone or asked for it.
func (a *Agent) deleteSessionsOf(node string) {
	seids := a.dp.SessionsOf(node)
	if len(seids) == 0 {
		return
	}
	err := a.store.ChangeEntries("sessions", func(tx cube.EntryTx) error {
		for _, s := range seids {
			if err := tx.Delete(model.SessionKey(s)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		a.logf("PFCP: deleting the sessions of %s: %v", node, err)
		return
	}
	a.logf("PFCP: deleted %d sessions of %s", len(seids), node)
}

// associated returns the association of a Node ID.
func (a *Agent) associated(node string) *association {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.assoc[node]
}

// heard notes that an SMF spoke (any request counts as a sign of life).
func (a *Agent) heard(from netip.AddrPort) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, as := range a.assoc {
		if as.peer == from {
			as.heard, as.lost = time.Now(), false
		}
	}
}

// heartbeats asks each associated SMF whether it is alive, and notices a
// restart (a new recovery time) in its answer.
func (a *Agent) heartbeats(now time.Time) {
	a.mu.Lock()
	every := time.Duration(a.cfg.Settings.PFCP.HeartbeatSeconds) * time.Second
	if every <= 0 {
		a.mu.Unlock()
		return
	}
	var due []*association
	for _, as := range a.assoc {
		if !as.waiting && now.Sub(as.heard) >= every && now.Sub(as.asked) >= every {
			as.waiting, as.asked = true, now
			due = append(due, as)
		}
	}
	rts := a.cfg.Settings.Recovery()
	a.mu.Unlock()
	for _, as := range due {
		as := as
		req := &pfcp.Message{Type: pfcp.HeartbeatRequest, IEs: pfcp.IEs{pfcp.TimeIE(pfcp.IERecoveryTimeStamp, rts)}}
		a.ask(as.peer, req, func(resp *pfcp.Message) {
			a.mu.Lock()
			as.waiting = false
			if resp == nil {
				if !as.lost {
					a.logf("PFCP: SMF %s does not answer heartbeats", as.Node)
				}
				as.lost = true
				a.mu.Unlock()
				return
			}
			as.heard, as.lost = time.Now(), false
			restarted := false
			if ie := resp.IEs.Find(pfcp.IERecoveryTimeStamp); ie != nil {
				if t, err := ie.Time(); err == nil && !t.Equal(as.recovery) {
					restarted = true
				}
			}
			a.mu.Unlock()
			if restarted {
				a.logf("PFCP: SMF %s restarted; deleting its sessions", as.Node)
				a.deleteSessionsOf(as.Node)
			}
		})
	}
}
