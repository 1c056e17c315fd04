package agent_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/nf/upf"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/agent"
	"github.com/edgenf/edgenf/internal/pfcp/client"
	"github.com/edgenf/edgenf/internal/tenant"
)

// associate sets up the client's association advertising CP Function
// Features cp.
func associate(t *testing.T, c *client.Client, cp uint32) {
	t.Helper()
	resp, err := c.Request(&pfcp.Message{Type: pfcp.AssociationSetupRequest, IEs: pfcp.IEs{
		c.Node.IE(), pfcp.TimeIE(pfcp.IERecoveryTimeStamp, c.Recovery), pfcp.FlagsIE(pfcp.IECPFunctionFeatures, cp, 1)}}, 5*time.Second)
	if err != nil || client.CauseOf(resp) != pfcp.CauseAccepted {
		t.Fatalf("association: %v %v", err, resp)
	}
	if f := uint64(resp.IEs.Find(pfcp.IEUPFunctionFeatures).Flags()); f&pfcp.FeatureEPFAR == 0 {
		t.Fatalf("UP Function Features %#x without EPFAR", f)
	}
}

// volumeOnly is a session whose one URR measures volume only: without
// traffic it has no usage to report.
func volumeOnly(gnbTEID uint32) []*pfcp.IE {
	rules := basic(gnbTEID)
	rules[5] = client.URR{ID: 1, Method: pfcp.MeasureVOLUM, Triggers: pfcp.TriggerVOLTH, VolumeThreshold: 1 << 30}.IE()
	return rules
}

// setDrain turns the cube's drain setting on, with a graceful release
// period of period seconds.
func setDrain(t *testing.T, e *engine.Engine, period int) {
	t.Helper()
	nftest.MustUpdate(t, e, func(topo *cube.Topology) error {
		c, err := topo.Edit("u1")
		if err != nil {
			return err
		}
		var cfg map[string]any
		if err := json.Unmarshal(c.Config, &cfg); err != nil {
			return err
		}
		p := cfg["pfcp"].(map[string]any)
		p["drain"], p["graceful_release_seconds"] = true, period
		raw, err := json.Marshal(cfg)
		c.Config = raw
		return err
	})
}

func nextUpdate(t *testing.T, c *client.Client) *pfcp.Message {
	t.Helper()
	select {
	case m := <-c.Updates():
		if err := pfcp.Check(m); err != nil {
			t.Fatalf("the UPF's Association Update Request breaks its table: %v", err)
		}
		if n, _ := pfcp.ParseNodeID(m.IEs.Find(pfcp.IENodeID).Value); n.FQDN != "upf.test" {
			t.Fatalf("Association Update Request from node %v", n)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no Association Update Request from the UPF")
		return nil
	}
}

// finalReport reads the next Session Report Request: the final usage
// report of a session the UPF deleted.
func finalReport(t *testing.T, c *client.Client) *pfcp.Message {
	t.Helper()
	select {
	case m := <-c.Reports():
		rt, _ := m.IEs.Find(pfcp.IEReportType).U8()
		fl := m.IEs.Find(pfcp.IEPFCPSRReqFlags)
		reps := client.UsageReports(m)
		if rt != pfcp.ReportUSAR || fl == nil || fl.Flags()&pfcp.FlagPSDBU == 0 || len(reps) != 1 ||
			reps[0].Trigger != pfcp.UsageTEBUR || !reps[0].HasDuration || reps[0].Duration == 0 {
			t.Fatalf("final report %+v: report type %#x, usage %+v", m, rt, reps)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no final usage report")
		return nil
	}
}

func TestAssociationUpdateFromSMF(t *testing.T) {
	e, c, _ := setup(t)
	associate(t, c, 0)
	// New CP Function Features are stored with the association.
	resp, err := c.Request(&pfcp.Message{Type: pfcp.AssociationUpdateRequest, IEs: pfcp.IEs{c.Node.IE(),
		pfcp.FlagsIE(pfcp.IECPFunctionFeatures, pfcp.CPFeatureEPFAR|0x01, 1)}}, 5*time.Second)
	if err != nil || client.CauseOf(resp) != pfcp.CauseAccepted || resp.IEs.Find(pfcp.IEUPFunctionFeatures) == nil {
		t.Fatalf("update: %v %+v", err, resp)
	}
	if err := pfcp.Check(resp); err != nil {
		t.Fatal(err)
	}
	rows := e.Entries(tenant.Admin, "u1", upf.TableAssociations)
	var as model.Association
	if len(rows) != 1 || json.Unmarshal(rows[0], &as) != nil || as.Features != pfcp.CPFeatureEPFAR|0x01 {
		t.Fatalf("stored associations %s", rows)
	}

	// PARPS: the sessions with usage get their final reports and go; the
	// one without stays for the SMF to delete.
	for i := range 2 {
		if _, _, err := c.Establish(uint64(0x200+i), basic(uint32(0x9000+i))...); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Establish(0x300, volumeOnly(0x9100)...); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a duration of at least a second
	resp, err = c.Request(&pfcp.Message{Type: pfcp.AssociationUpdateRequest, IEs: pfcp.IEs{c.Node.IE(),
		pfcp.FlagsIE(pfcp.IEPFCPAUReqFlags, pfcp.FlagPARPS, 1)}}, 5*time.Second)
	if err != nil || client.CauseOf(resp) != pfcp.CauseAccepted {
		t.Fatalf("release preparation: %v %+v", err, resp)
	}
	seen := map[uint64]bool{}
	for range 2 {
		seen[finalReport(t, c).SEID] = true
	}
	if !seen[0x200] || !seen[0x201] {
		t.Fatalf("final reports for sessions %v, want 0x200 and 0x201", seen)
	}
	left := sessionsSettled(t, e, 1)
	if len(left) != 1 || left[0].CPSEID != 0x300 {
		t.Fatalf("sessions left %+v, want only 0x300's", left)
	}
	select {
	case m := <-c.Reports():
		t.Fatalf("a report for a session without usage: %+v", m)
	case <-time.After(300 * time.Millisecond):
	}
}

// A draining UPF asks an SMF with EPFAR to prepare, sends the final
// reports, asks for the release saying so, and refuses new sessions and
// associations; the SMF's release then removes everything.
func TestDrainWithEnhancedRelease(t *testing.T) {
	e, c, upfAddr := setup(t)
	associate(t, c, pfcp.CPFeatureEPFAR)
	if _, _, err := c.Establish(0x400, basic(0x9000)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Establish(0x401, volumeOnly(0x9001)...); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	setDrain(t, e, 120)

	prep := nextUpdate(t, c)
	if fl := prep.IEs.Find(pfcp.IEPFCPAUReqFlags); fl == nil || fl.Flags()&pfcp.FlagPARPS == 0 || prep.IEs.Find(pfcp.IEAssociationReleaseRequest) != nil {
		t.Fatalf("first update %+v: want PARPS alone", prep)
	}
	if m := finalReport(t, c); m.SEID != 0x400 {
		t.Fatalf("final report for session %#x, want 0x400", m.SEID)
	}
	rel := nextUpdate(t, c)
	ar := rel.IEs.Find(pfcp.IEAssociationReleaseRequest)
	if ar == nil || ar.Flags() != pfcp.FlagSARR|pfcp.FlagURSS || rel.IEs.Find(pfcp.IEGracefulReleasePeriod) != nil {
		t.Fatalf("second update %+v: want SARR and URSS, no graceful period", rel)
	}
	if left := sessionsSettled(t, e, 1); len(left) != 1 || left[0].CPSEID != 0x401 {
		t.Fatalf("sessions left %+v", left)
	}
	v, err := e.View(tenant.Admin, "u1", "associations")
	if err != nil {
		t.Fatal(err)
	}
	if as := v.([]agent.AssociationStatus); len(as) != 1 || as[0].State != "releasing" {
		t.Fatalf("associations view %+v", as)
	}

	// Draining: no new session, no new association.
	if _, r, err := c.Establish(0x402, basic(0x9002)...); err == nil || client.CauseOf(r) != pfcp.CauseNoResources {
		t.Fatalf("establishment while draining: %v %+v", err, r)
	}
	other, err := client.Dial(netip.MustParseAddrPort("127.0.0.2:0"), upfAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if r, err := other.Associate(); err == nil || client.CauseOf(r) != pfcp.CauseRejected {
		t.Fatalf("association while draining: %v %+v", err, r)
	}

	// The SMF deletes what is left and releases.
	resp, err := c.Request(&pfcp.Message{Type: pfcp.AssociationReleaseRequest, IEs: pfcp.IEs{c.Node.IE()}}, 5*time.Second)
	if err != nil || client.CauseOf(resp) != pfcp.CauseAccepted {
		t.Fatalf("release: %v", err)
	}
	if n := len(sessions(t, e)); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
}

// An SMF without EPFAR is asked for the release at once, with the graceful
// release period; its sessions stay until it acts.
func TestDrainWithGracefulReleasePeriod(t *testing.T) {
	e, c, _ := setup(t)
	associate(t, c, 0)
	if _, _, err := c.Establish(0x500, basic(0x9000)...); err != nil {
		t.Fatal(err)
	}
	setDrain(t, e, 120)
	rel := nextUpdate(t, c)
	ar := rel.IEs.Find(pfcp.IEAssociationReleaseRequest)
	gp := rel.IEs.Find(pfcp.IEGracefulReleasePeriod)
	if ar == nil || ar.Flags() != pfcp.FlagSARR || gp == nil || rel.IEs.Find(pfcp.IEPFCPAUReqFlags) != nil {
		t.Fatalf("update %+v: want SARR and a graceful release period", rel)
	}
	if d, err := gp.Timer(); err != nil || d != 2*time.Minute || gp.Value[0] != 0x22 {
		t.Fatalf("graceful release period %x = %v, %v; want 2 minutes", gp.Value, d, err)
	}
	if n := len(sessions(t, e)); n != 1 {
		t.Fatalf("%d sessions, want the SMF's one kept", n)
	}
	select {
	case m := <-c.Reports():
		t.Fatalf("a report to an SMF without EPFAR: %+v", m)
	case m := <-c.Updates():
		if m.IEs.Find(pfcp.IEAssociationReleaseRequest) == nil || m.Seq != rel.Seq {
			t.Fatalf("a second update: %+v", m)
		}
	case <-time.After(300 * time.Millisecond):
	}
	if !strings.Contains(string(mustView(t, e)), `"releasing"`) {
		t.Fatal("the association is not shown releasing")
	}
}

// sessionsSettled returns the sessions once there are n of them (the UPF
// deletes the sessions it reported after sending the reports), or after 30
// seconds (a busy machine).
func sessionsSettled(t *testing.T, e *engine.Engine, n int) []model.Session {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if s := sessions(t, e); len(s) == n || time.Now().After(deadline) {
			return s
		}
	}
}

func mustView(t *testing.T, e *engine.Engine) []byte {
	t.Helper()
	v, err := e.View(tenant.Admin, "u1", "associations")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(v)
	return raw
}
