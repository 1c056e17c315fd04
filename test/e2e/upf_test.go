package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/gnbsim"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
	"github.com/edgenf/edgenf/internal/testenv"
)

// upfLab is the edge use case with the real daemon: a gNB namespace with
// simulated UEs, the upf cube set up with `edgenf apply`, a data network
// namespace, an SMF on loopback.
type upfLab struct {
	d       *daemon
	lab     *netlab.Lab
	gnbHost *netlab.Host
	dn      *netlab.Host
	gnb     *gnbsim.GNB
	smf     *client.Client
	pfcp    netip.AddrPort
}

const upfYAML = `
cubes:
  - name: upf1
    type: upf
    config:
      pfcp: {address: 127.0.0.1, port: %d}
      node_id: upf1.edge.test
      ue_pools: [{prefix: 198.19.0.0/16}]
    ports:
      - {name: n3, peer: %s, addresses: [198.18.1.1/24]}
      - {name: n6, peer: %s, addresses: [198.18.2.1/24], config: {gateway: 198.18.2.2}}
`

func newUPFLab(t *testing.T, daemonFlags ...string) *upfLab {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	l := &upfLab{d: startDaemon(t, daemonFlags...), lab: netlab.NewT(t)}
	var err error
	l.gnbHost, err = l.lab.Host("gnb")
	must(err)
	l.dn, err = l.lab.Host("dn")
	must(err)
	n3, err := l.lab.Veth(l.gnbHost, "eth0", "n3", "198.18.1.2/24")
	must(err)
	n6, err := l.lab.Veth(l.dn, "eth0", "n6", "198.18.2.2/24")
	must(err)
	must(l.dn.AddRoute("198.19.0.0/16", "198.18.2.1"))
	port := nftest.FreeUDPPort(t)
	l.pfcp = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	file := filepath.Join(t.TempDir(), "upf.yaml")
	must(os.WriteFile(file, []byte(fmt.Sprintf(upfYAML, port, n3, n6)), 0o644))
	l.d.cli("apply", "-f", file)
	l.gnb, err = gnbsim.New(l.gnbHost, netip.MustParseAddr("198.18.1.2"), netip.MustParseAddr("198.18.1.1"))
	must(err)
	t.Cleanup(l.gnb.Close)
	l.smf, err = client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), l.pfcp)
	must(err)
	t.Cleanup(func() { l.smf.Close() })
	_, err = l.smf.Associate()
	must(err)
	return l
}

// attach establishes a session for a new UE (tunnel and address chosen by
// the UPF) and puts the UE behind the gNB.
func (l *upfLab) attach(t *testing.T, name string, cpSEID uint64, dlTEID uint32) (*gnbsim.UE, *client.Session, netip.Addr) {
	t.Helper()
	s, _, err := l.smf.Establish(cpSEID,
		client.PDR{ID: 1, Precedence: 200, Access: true, ChooseTEID: true, ChooseID: 1, ChooseUE4: true, QFI: 9, FAR: 1, URRs: []uint32{1}}.IE(),
		client.PDR{ID: 2, Precedence: 200, ChooseUE4: true, FAR: 2, URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
		client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE(),
		client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: dlTEID, Tunnel: netip.MustParseAddr("198.18.1.2")}.IE(),
		client.QER{ID: 1, QFI: 9}.IE(),
		client.URR{ID: 1, Method: pfcp.MeasureVOLUM, Triggers: pfcp.TriggerPERIO, Period: 3600}.IE())
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.TEIDOf(1)
	a, _ := s.UEAddrOf(1)
	host, err := l.lab.Host(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Sysctl("net.ipv6.conf.all.disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	u, err := l.gnb.AddUE(host, gnbsim.UEConfig{Addresses: []string{a.IPv4.String() + "/32"}, ULTEID: f.TEID, DLTEID: dlTEID, QFI: 9})
	if err != nil {
		t.Fatal(err)
	}
	return u, s, a.IPv4
}

func (l *upfLab) recovery(t *testing.T) time.Time {
	t.Helper()
	resp, err := l.smf.Request(&pfcp.Message{Type: pfcp.HeartbeatRequest, IEs: pfcp.IEs{pfcp.TimeIE(pfcp.IERecoveryTimeStamp, l.smf.Recovery)}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := resp.IEs.Find(pfcp.IERecoveryTimeStamp).Time()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// Killing the daemon during traffic loses nothing, and the restarted one
// still has the session, its counters, and the recovery time stamp.
func TestUPFKillDaemonDuringTraffic(t *testing.T) {
	testenv.E2E(t)
	l := newUPFLab(t)
	u, s, ueAddr := l.attach(t, "ue1", 1, 0x9001)
	before := l.recovery(t)
	c := ctx(t, 90*time.Second)
	for _, dst := range []struct {
		from, to *netlab.Host
		addr     string
	}{{u.Host, l.dn, "198.18.2.2"}, {l.dn, u.Host, ueAddr.String()}} {
		if _, _, err := netlab.UDPFlow(c, dst.from, dst.to, dst.addr, 6100, 10, 100, 100); err != nil {
			t.Fatal(err)
		}
	}
	type res struct {
		sent, recv int
		err        error
	}
	up, down := make(chan res, 1), make(chan res, 1)
	go func() {
		s, r, err := netlab.UDPFlow(c, u.Host, l.dn, "198.18.2.2", 6101, 6000, 300, 2000)
		up <- res{s, r, err}
	}()
	go func() {
		s, r, err := netlab.UDPFlow(c, l.dn, u.Host, ueAddr.String(), 6102, 6000, 300, 2000)
		down <- res{s, r, err}
	}()
	time.Sleep(800 * time.Millisecond)
	l.d.kill()
	time.Sleep(time.Second)
	l.d.start()
	for i, ch := range []chan res{up, down} {
		r := <-ch
		if r.err != nil || r.sent != 6000 || r.recv != r.sent {
			t.Errorf("%s through a daemon killed and restarted: sent %d, received %d: %v", []string{"uplink", "downlink"}[i], r.sent, r.recv, r.err)
		}
	}
	if t.Failed() {
		t.Fatal(l.d.cli("view", "upf1", "counters"))
	}
	if after := l.recovery(t); !after.Equal(before) {
		t.Fatalf("recovery time stamp %v, was %v", after, before)
	}
	var views []struct {
		SEID      uint64 `json:"seid"`
		UEIPv4    string `json:"ue_ipv4"`
		ULPackets uint64 `json:"ul_packets"`
		DLPackets uint64 `json:"dl_packets"`
	}
	l.d.json(&views, "view", "upf1", "sessions")
	if len(views) != 1 || views[0].SEID != s.UPSEID || views[0].UEIPv4 != ueAddr.String() ||
		views[0].ULPackets < 6000 || views[0].DLPackets < 6000 {
		t.Fatalf("sessions view after the restart: %+v", views)
	}
	// The session is still the SMF's to change.
	if _, err := l.smf.Modify(s, client.QER{ID: 1, QFI: 9, DLClosed: true}.UpdateIE()); err != nil {
		t.Fatal(err)
	}
	if got := sendUDP(t, l.dn, u.Host, ueAddr.String(), 6103, 50, 100); got != 0 {
		t.Fatalf("%d packets passed a gate closed after the restart", got)
	}
}

// Killing the daemon while an SMF establishes sessions with 32 requests in
// flight (some written to the journal and the kernel, not yet durable or
// answered) loses no session the SMF was told of: the restarted daemon has
// every acknowledged one, in its table and in the kernel.
func TestUPFKillDaemonDuringEstablishments(t *testing.T) {
	testenv.E2E(t)
	l := newUPFLab(t)
	var (
		mu    sync.Mutex
		acked = map[uint64]bool{} // UP SEIDs
		stop  atomic.Bool
		wg    sync.WaitGroup
		next  atomic.Uint64
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				cp := next.Add(1)
				s, _, err := l.smf.Establish(cp,
					client.PDR{ID: 1, Precedence: 200, Access: true, ChooseTEID: true, ChooseID: 1, ChooseUE4: true, FAR: 1}.IE(),
					client.PDR{ID: 2, Precedence: 200, ChooseUE4: true, FAR: 2}.IE(),
					client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE(),
					client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: 0x10000 + uint32(cp), Tunnel: netip.MustParseAddr("198.18.1.2")}.IE())
				if err != nil {
					return // the daemon is gone: this one was never acknowledged
				}
				mu.Lock()
				acked[s.UPSEID] = true
				mu.Unlock()
			}
		}()
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 200 {
			break
		}
	}
	l.d.kill()
	stop.Store(true)
	wg.Wait() // the requests in flight time out
	if len(acked) < 200 {
		t.Fatalf("only %d sessions established before the kill", len(acked))
	}
	l.d.start()
	var views []struct {
		SEID uint64 `json:"seid"`
	}
	l.d.json(&views, "view", "upf1", "sessions")
	have := map[uint64]bool{}
	for _, v := range views {
		have[v.SEID] = true
	}
	lost := 0
	for seid := range acked {
		if !have[seid] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged sessions lost by kill -9 (%d sessions after the restart)", lost, len(acked), len(views))
	}
	var ctrs []struct {
		Name  string `json:"name"`
		Value uint64 `json:"value"`
	}
	l.d.json(&ctrs, "view", "upf1", "counters")
	for _, c := range ctrs {
		if c.Name == "sessions" && c.Value != uint64(len(views)) {
			t.Fatalf("%d sessions in the kernel, %d in the table", c.Value, len(views))
		}
	}
}

const staticSession = `
- seid: 77
  pdrs:
    - {id: 1, precedence: 100, source: access, f_teid: {teid: 4096}, ue_ipv4: 198.19.9.9, outer_header_removal: gtp-u, far: 1, urrs: [1]}
    - {id: 2, precedence: 100, source: core, ue_ipv4: 198.19.9.9, far: 2, urrs: [1]}
  fars:
    - {id: 1, apply_action: [forw], destination: core}
    - {id: 2, apply_action: [forw], destination: access, outer_header_creation: {teid: 36864, address: 198.18.1.2}}
  urrs:
    - {id: 1, measurement_method: [volume]}
`

// Sessions can come from the CLI too (no SMF), and the views, the
// associations and the metrics show them.
func TestUPFSessionsFromTheCLIAndViews(t *testing.T) {
	testenv.E2E(t)
	l := newUPFLab(t)
	file := filepath.Join(t.TempDir(), "session.yaml")
	if err := os.WriteFile(file, []byte(staticSession), 0o644); err != nil {
		t.Fatal(err)
	}
	l.d.cli("table", "add", "upf1", "sessions", "-f", file)
	host, err := l.lab.Host("ue")
	if err != nil {
		t.Fatal(err)
	}
	host.Sysctl("net.ipv6.conf.all.disable_ipv6", "1")
	if _, err := l.gnb.AddUE(host, gnbsim.UEConfig{Addresses: []string{"198.19.9.9/32"}, ULTEID: 4096, DLTEID: 36864}); err != nil {
		t.Fatal(err)
	}
	c := ctx(t, 60*time.Second)
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if host.Ping(c, "198.18.2.2", 1) == nil {
			break
		}
	}
	if err := host.Ping(c, "198.18.2.2", 3); err != nil {
		t.Fatal(err)
	}
	out := l.d.cli("view", "upf1", "sessions")
	if !strings.Contains(out, "77") || !strings.Contains(out, "198.19.9.9") || !strings.Contains(out, "0x00001000") {
		t.Fatalf("sessions view:\n%s", out)
	}
	out = l.d.cli("view", "upf1", "associations")
	if !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "up") {
		t.Fatalf("associations view:\n%s", out)
	}
	var urrs []struct {
		SEID     uint64 `json:"seid"`
		URR      uint32 `json:"urr"`
		ULBytes  uint64 `json:"ul_bytes"`
		DLPacket uint64 `json:"dl_packets"`
	}
	l.d.json(&urrs, "view", "upf1", "urrs")
	if len(urrs) != 1 || urrs[0].ULBytes == 0 || urrs[0].DLPacket == 0 {
		t.Fatalf("urrs view %+v", urrs)
	}
	// A session that clashes with this one (same TEID) is refused, with
	// the field named, and nothing changes.
	bad := strings.Replace(strings.Replace(staticSession, "seid: 77", "seid: 78", 1), "198.19.9.9", "198.19.9.10", -1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = l.d.try("table", "add", "upf1", "sessions", "-f", file)
	if err == nil || !strings.Contains(out, "TEID 0x00001000 is already used by session 77") {
		t.Logf("%s", out)
		t.Fatalf("clashing session: %v\n%s", err, out)
	}
	if got := l.d.cli("table", "list", "upf1", "sessions", "-o", "json"); strings.Contains(got, `"seid":78`) {
		t.Fatal("the refused session was stored")
	}
	// Prometheus.
	body := scrape(t, l.d)
	for _, want := range []string{
		`edgenf_upf_sessions{cube="upf1",slice="",tenant=""} 1`,
		`edgenf_upf_associations{cube="upf1",slice="",tenant=""} 1`,
		`edgenf_upf_pfcp_messages_total{cube="upf1",direction="received",slice="",tenant="",type="Association Setup Request"} 1`,
		`edgenf_upf_pfcp_responses_total{cause="Request accepted",cube="upf1",slice="",tenant=""}`,
		`edgenf_upf_gtpu_packets_total{cube="upf1",direction="uplink",slice="",tenant=""}`,
		`edgenf_upf_drops_total{cube="upf1",reason="gate",slice="",tenant=""} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func scrape(t *testing.T, d *daemon) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}}
	resp, err := hc.Get("http://edgenfd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
