package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	"github.com/edgenf/edgenf/internal/testenv"
)

var _ = upf.Type // registers the NF type

func upfCube(port uint16, extra string) *cube.Cube {
	return &cube.Cube{Name: "u1", Type: "upf",
		Config: json.RawMessage(fmt.Sprintf(`{"pfcp":{"address":"127.0.0.1","port":%d,"heartbeat_seconds":-1,"t1_ms":300},
			"node_id":"upf.test","teid_range":"0x1000-0x1fffff",
			"ue_pools":[{"prefix":"198.19.0.0/16"},{"prefix":"2001:db8:100::/48"}]%s}`, port, extra)),
		Ports: []cube.Port{
			{Name: "n3", Index: 0, Addresses: []string{"198.18.1.1/24", "2001:db8:1::1/64"}},
			{Name: "n6", Index: 1, Addresses: []string{"198.18.2.1/24"}},
		}}
}

// setup starts an engine with a upf cube listening on loopback and an SMF
// associated with it.
func setup(t *testing.T) (*engine.Engine, *client.Client, netip.AddrPort) {
	t.Helper()
	e := nftest.Engine(t)
	port := nftest.FreeUDPPort(t)
	nftest.MustUpdate(t, e, func(topo *cube.Topology) error {
		topo.Put(upfCube(port, ""))
		return nil
	})
	upfAddr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	c, err := client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), upfAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return e, c, upfAddr
}

// basic are the rules of a typical PDU session: an uplink PDR on a tunnel
// the UPF chooses, a downlink PDR on a UE address it allocates, a QER and a
// URR.
func basic(gnbTEID uint32) []*pfcp.IE {
	return []*pfcp.IE{
		client.PDR{ID: 1, Precedence: 200, Access: true, ChooseTEID: true, ChooseID: 1, ChooseUE4: true, FAR: 1, URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
		client.PDR{ID: 2, Precedence: 200, ChooseUE4: true, FAR: 2, URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
		client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE(),
		client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: gnbTEID, Tunnel: netip.MustParseAddr("198.18.1.2")}.IE(),
		client.QER{ID: 1, QFI: 9}.IE(),
		client.URR{ID: 1, Method: pfcp.MeasureVOLUM | pfcp.MeasureDURAT, Triggers: pfcp.TriggerVOLTH, VolumeThreshold: 1 << 30}.IE(),
	}
}

func sessions(t *testing.T, e *engine.Engine) []model.Session {
	t.Helper()
	var out []model.Session
	for _, raw := range e.Entries(tenant.Admin, "u1", upf.TableSessions) {
		var s model.Session
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestHeartbeatAndAssociation(t *testing.T) {
	e, c, _ := setup(t)
	resp, err := c.Request(&pfcp.Message{Type: pfcp.HeartbeatRequest, IEs: pfcp.IEs{pfcp.TimeIE(pfcp.IERecoveryTimeStamp, c.Recovery)}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rts, err := resp.IEs.Find(pfcp.IERecoveryTimeStamp).Time()
	cb, _ := e.CubeHeader(tenant.Admin, "u1")
	cfg, _ := model.DecodeConfig(cb)
	if err != nil || !rts.Equal(cfg.Recovery()) {
		t.Fatalf("recovery time stamp %v, the cube's is %v", rts, cfg.Recovery())
	}
	// Sessions need an association first.
	_, r, err := c.Establish(1, basic(0x9000)...)
	if err == nil || client.CauseOf(r) != pfcp.CauseNoAssociation {
		t.Fatalf("establishment without association: %v", err)
	}
	resp, err = c.Associate()
	if err != nil {
		t.Fatal(err)
	}
	node, _ := pfcp.ParseNodeID(resp.IEs.Find(pfcp.IENodeID).Value)
	feat := resp.IEs.Find(pfcp.IEUPFunctionFeatures).Flags()
	if node.FQDN != "upf.test" || uint64(feat)&(pfcp.FeatureFTUP|pfcp.FeatureUEIP|pfcp.FeatureEMPU) == 0 || uint64(feat)&pfcp.FeatureBUCP != 0 {
		t.Fatalf("association response: node %v features %#x", node, feat)
	}
	if n := len(e.Entries(tenant.Admin, "u1", upf.TableAssociations)); n != 1 {
		t.Fatalf("%d associations stored", n)
	}
	v, err := e.View(tenant.Admin, "u1", "associations")
	if err != nil {
		t.Fatal(err)
	}
	if as := v.([]agent.AssociationStatus); len(as) != 1 || as[0].Node != "127.0.0.1" || as[0].State != "up" {
		t.Fatalf("associations view %+v", as)
	}
}

func TestEstablishModifyDelete(t *testing.T) {
	e, c, _ := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	s, resp, err := c.Establish(0x77, basic(0x9000)...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.SEID != 0x77 || s.UPSEID == 0 {
		t.Fatalf("response SEID %#x, UP SEID %#x", resp.SEID, s.UPSEID)
	}
	f, ok := s.TEIDOf(1)
	if !ok || f.TEID < 0x1000 || f.TEID > 0x1fffff || f.IPv4.String() != "198.18.1.1" || f.IPv6.IsValid() {
		t.Fatalf("chosen F-TEID %+v", f)
	}
	u1, ok1 := s.UEAddrOf(1)
	u2, ok2 := s.UEAddrOf(2)
	if !ok1 || !ok2 || u1.IPv4 != u2.IPv4 || !netip.MustParsePrefix("198.19.0.0/16").Contains(u1.IPv4) {
		t.Fatalf("chosen UE addresses %+v %+v", u1, u2)
	}
	ss := sessions(t, e)
	if len(ss) != 1 || ss[0].SEID != s.UPSEID || ss[0].CPSEID != 0x77 || ss[0].PDRs[0].FTEID.TEID != f.TEID {
		t.Fatalf("sessions table %+v", ss)
	}

	// Modification: the gNB's tunnel moves, a second QoS flow appears,
	// the URR is queried.
	resp, err = c.Modify(s,
		client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: 0x9001, Tunnel: netip.MustParseAddr("198.18.1.3"), SendEndMarker: true}.UpdateIE(),
		client.PDR{ID: 3, Precedence: 100, ChooseUE4: false, UEIPv4: u1.IPv4, SDF: []string{"permit out 17 from any 5000 to assigned"}, FAR: 3}.IE(),
		client.FAR{ID: 3, Action: pfcp.ActionBUFF | pfcp.ActionNOCP}.IE(),
		pfcp.Group(pfcp.IEQueryURR, pfcp.U32IE(pfcp.IEURRID, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if reps := client.UsageReports(resp); len(reps) != 1 || reps[0].URR != 1 || reps[0].Trigger&pfcp.UsageIMMER == 0 || !reps[0].HasDuration {
		t.Fatalf("query URR answered with %+v", reps)
	}
	ss = sessions(t, e)
	if len(ss[0].PDRs) != 3 || ss[0].Far(2).OuterHeader.Address != "198.18.1.3" || !ss[0].Far(3).HasAction("buff") {
		t.Fatalf("after modification %+v", ss[0])
	}
	// Errors: unknown rules, unknown session.
	resp, err = c.Modify(s, client.FAR{ID: 99, Action: pfcp.ActionDROP}.UpdateIE())
	if err == nil || client.CauseOf(resp) != pfcp.CauseRuleFailure || resp.IEs.Find(pfcp.IEFailedRuleID) == nil {
		t.Fatalf("update of an unknown FAR: %v", err)
	}
	resp, err = c.Modify(&client.Session{UPSEID: 12345}, client.FAR{ID: 1, Action: pfcp.ActionDROP}.UpdateIE())
	if err == nil || client.CauseOf(resp) != pfcp.CauseSessionNotFound || resp.SEID != 0 {
		t.Fatalf("modification of an unknown session: %v", err)
	}
	// A PDR naming a FAR that does not exist: the model refuses it.
	resp, err = c.Modify(s, client.PDR{ID: 9, Precedence: 1, UEIPv4: u1.IPv4, FAR: 42}.IE())
	if err == nil || client.CauseOf(resp) != pfcp.CauseRuleFailure {
		t.Fatalf("PDR with an unknown FAR: %v", err)
	}
	if fr := resp.IEs.Find(pfcp.IEFailedRuleID); fr == nil || !bytes.Equal(fr.Value, []byte{pfcp.RulePDR, 0, 9}) {
		t.Fatalf("failed rule %v", fr)
	}

	// Deletion: a final usage report, and the session is gone.
	resp, err = c.Delete(s)
	if err != nil {
		t.Fatal(err)
	}
	if reps := client.UsageReports(resp); len(reps) != 1 || reps[0].Trigger&pfcp.UsageTERMR == 0 || reps[0].SEQN != 1 {
		t.Fatalf("deletion reports %+v", reps)
	}
	if n := len(sessions(t, e)); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
}

func TestMalformedRequestsGetTheRightCause(t *testing.T) {
	_, c, upfAddr := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	raw, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(upfAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ask := func(b []byte) *pfcp.Message {
		t.Helper()
		raw.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := raw.Write(b); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 65536)
		n, err := raw.Read(buf)
		if err != nil {
			return nil
		}
		m, err := pfcp.ParseMessage(buf[:n])
		if err != nil {
			t.Fatalf("the UPF's answer does not parse: %v", err)
		}
		return m
	}
	node := pfcp.NodeID{Addr: netip.MustParseAddr("127.0.0.1")}
	fseid := pfcp.FSEID{SEID: 5, IPv4: netip.MustParseAddr("127.0.0.1")}
	for i, tc := range []struct {
		name      string
		msg       *pfcp.Message
		bytes     []byte
		cause     pfcp.Cause
		offending pfcp.IEType
	}{
		{name: "no F-SEID", msg: &pfcp.Message{Type: pfcp.SessionEstablishmentRequest, HasSEID: true,
			IEs: append(pfcp.IEs{node.IE()}, basic(1)...)}, cause: pfcp.CauseMandatoryIEMissing, offending: pfcp.IEFSEID},
		{name: "no Create FAR", msg: &pfcp.Message{Type: pfcp.SessionEstablishmentRequest, HasSEID: true,
			IEs: pfcp.IEs{node.IE(), fseid.IE(), basic(1)[0]}}, cause: pfcp.CauseMandatoryIEMissing, offending: pfcp.IECreateFAR},
		{name: "short F-SEID", msg: &pfcp.Message{Type: pfcp.SessionEstablishmentRequest, HasSEID: true,
			IEs: append(pfcp.IEs{node.IE(), pfcp.NewIE(pfcp.IEFSEID, []byte{2, 0})}, basic(1)...)}, cause: pfcp.CauseMandatoryIEIncorrect, offending: pfcp.IEFSEID},
		{name: "deletion of an unknown session", msg: &pfcp.Message{Type: pfcp.SessionDeletionRequest, HasSEID: true, SEID: 999},
			cause: pfcp.CauseSessionNotFound},
		{name: "association update without association", msg: &pfcp.Message{Type: pfcp.AssociationUpdateRequest,
			IEs: pfcp.IEs{pfcp.NodeID{FQDN: "other"}.IE()}}, cause: pfcp.CauseNoAssociation},
		{name: "unsupported apply action", msg: &pfcp.Message{Type: pfcp.SessionEstablishmentRequest, HasSEID: true,
			IEs: pfcp.IEs{node.IE(), fseid.IE(), basic(1)[1],
				client.FAR{ID: 2, Action: pfcp.ActionFORW | pfcp.ActionIPMA, Dest: pfcp.InterfaceAccess}.IE()}}, cause: pfcp.CauseServiceNotSupported},
	} {
		tc.msg.Seq = uint32(1000 + i)
		resp := ask(tc.msg.Marshal())
		if resp == nil || resp.Type != tc.msg.Type+1 || resp.Seq != tc.msg.Seq || client.CauseOf(resp) != tc.cause {
			t.Fatalf("%s: answered %+v, want cause %s", tc.name, resp, tc.cause)
		}
		if tc.offending != 0 {
			if o, _ := resp.IEs.Find(pfcp.IEOffendingIE).U16(); pfcp.IEType(o) != tc.offending {
				t.Fatalf("%s: offending IE %d, want %s", tc.name, o, tc.offending)
			}
		}
		if err := pfcp.Check(resp); err != nil {
			t.Fatalf("%s: the UPF's answer breaks its own table: %v", tc.name, err)
		}
	}
	// Another PFCP version: Version Not Supported.
	b := (&pfcp.Message{Type: pfcp.HeartbeatRequest, Seq: 7, IEs: pfcp.IEs{pfcp.TimeIE(pfcp.IERecoveryTimeStamp, time.Now())}}).Marshal()
	b[0] = 2 << 5
	if resp := ask(b); resp == nil || resp.Type != pfcp.VersionNotSupportedResponse || resp.Seq != 7 {
		t.Fatalf("version 2: %+v", resp)
	}
	// Too short for a header: no answer at all.
	if resp := ask([]byte{0x20, 1}); resp != nil {
		t.Fatalf("answered a 2-octet datagram: %+v", resp)
	}
}

func TestRetransmissionAnsweredFromCache(t *testing.T) {
	e, c, upfAddr := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	raw, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, net.UDPAddrFromAddrPort(upfAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// The request comes from another port of the associated SMF's address.
	node := pfcp.NodeID{Addr: netip.MustParseAddr("127.0.0.1")}
	fseid := pfcp.FSEID{SEID: 8, IPv4: netip.MustParseAddr("127.0.0.1")}
	req := (&pfcp.Message{Type: pfcp.SessionEstablishmentRequest, HasSEID: true, Seq: 4242,
		IEs: append(pfcp.IEs{node.IE(), fseid.IE()}, basic(0x9000)...)}).Marshal()
	var answers [][]byte
	for range 3 {
		raw.SetReadDeadline(time.Now().Add(2 * time.Second))
		raw.Write(req)
		buf := make([]byte, 65536)
		n, err := raw.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, buf[:n])
	}
	if !bytes.Equal(answers[0], answers[1]) || !bytes.Equal(answers[1], answers[2]) {
		t.Fatal("retransmissions got different answers")
	}
	if n := len(sessions(t, e)); n != 1 {
		t.Fatalf("%d sessions for one request sent three times", n)
	}
}

func TestPeriodicUsageReport(t *testing.T) {
	_, c, _ := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	rules := basic(0x9000)
	rules[5] = client.URR{ID: 1, Method: pfcp.MeasureVOLUM, Triggers: pfcp.TriggerPERIO, Period: 1}.IE()
	if _, _, err := c.Establish(0x99, rules...); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-c.Reports():
		rt, _ := m.IEs.Find(pfcp.IEReportType).U8()
		reps := client.UsageReports(m)
		if m.SEID != 0x99 || rt != pfcp.ReportUSAR || len(reps) != 1 || reps[0].Trigger&pfcp.TriggerPERIO == 0 {
			t.Fatalf("report %+v %+v", m, reps)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no periodic report")
	}
}

func TestAssociationReleaseDeletesSessions(t *testing.T) {
	e, c, _ := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := c.Establish(uint64(100+i), basic(uint32(0x9000+i))...); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.Request(&pfcp.Message{Type: pfcp.AssociationReleaseRequest, IEs: pfcp.IEs{c.Node.IE()}}, 5*time.Second)
	if err != nil || client.CauseOf(resp) != pfcp.CauseAccepted {
		t.Fatalf("release: %v", err)
	}
	if n := len(sessions(t, e)); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
	if n := len(e.Entries(tenant.Admin, "u1", upf.TableAssociations)); n != 0 {
		t.Fatalf("%d associations left", n)
	}
}

// A restarted daemon keeps its sessions and associations and answers with
// its unchanged recovery time stamp.
func TestRestartKeepsSessionsAndRecoveryTime(t *testing.T) {
	testenv.NeedRoot(t)
	dir := t.TempDir()
	cfg := engine.Config{PinRoot: filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfa-%d", time.Now().UnixNano())),
		StateFile: filepath.Join(dir, "state.json"), Logger: slog.New(slog.DiscardHandler)}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.DestroyAt(cfg) })
	port := nftest.FreeUDPPort(t)
	if err := e.Update(func(topo *cube.Topology) error { topo.Put(upfCube(port, "")); return nil }); err != nil {
		t.Fatal(err)
	}
	upfAddr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	c, err := client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), upfAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	s, _, err := c.Establish(0x42, basic(0x9000)...)
	if err != nil {
		t.Fatal(err)
	}
	hb := func() time.Time {
		resp, err := c.Request(&pfcp.Message{Type: pfcp.HeartbeatRequest, IEs: pfcp.IEs{pfcp.TimeIE(pfcp.IERecoveryTimeStamp, c.Recovery)}}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := resp.IEs.Find(pfcp.IERecoveryTimeStamp).Time()
		return ts
	}
	before := hb()
	e.Close()
	e, err = engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if after := hb(); !after.Equal(before) {
		t.Fatalf("recovery time stamp changed across a restart: %v -> %v", before, after)
	}
	// The session is still the SMF's to modify.
	if _, err := c.Modify(s, client.QER{ID: 1, DLClosed: true}.UpdateIE()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(s); err != nil {
		t.Fatal(err)
	}
}

// establish sets up n sessions over PFCP with window requests in flight
// and returns how long it took.
func establish(tb testing.TB, c *client.Client, first, n, window int) time.Duration {
	tb.Helper()
	var next atomic.Int64
	next.Store(int64(first))
	last := int64(first + n)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for range window {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > last {
					return
				}
				if _, _, err := c.Establish(uint64(i), basic(uint32(0x100000+i))...); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if err, ok := failed.Load().(error); ok {
		tb.Fatal(err)
	}
	return d
}

// 10,000 sessions over PFCP, 64 requests in flight.
func TestTenThousandSessions(t *testing.T) {
	e, c, _ := setup(t)
	if _, err := c.Associate(); err != nil {
		t.Fatal(err)
	}
	const n, window = 10000, 64
	establish(t, c, 0, n, window)
	if got := len(e.Entries(tenant.Admin, "u1", upf.TableSessions)); got != n {
		t.Fatalf("%d sessions in the table", got)
	}
	v, err := e.View(tenant.Admin, "u1", "counters")
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range v.([]upf.Counter) {
		if ctr.Name == "sessions" && ctr.Value != n {
			t.Fatalf("%d sessions in the kernel", ctr.Value)
		}
	}
}
