package upf

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/gnbsim"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
)

// edge is the use case end to end: a gNB namespace (198.18.1.2,
// 2001:db8:1::2) with simulated UEs behind it, the upf cube (n3 .1, n6 .1),
// a data network namespace (198.18.2.2, 2001:db8:2::2), and an SMF on
// loopback that sets the sessions up over PFCP.
type edge struct {
	t       *testing.T
	e       *engine.Engine
	lab     *netlab.Lab
	gnbHost *netlab.Host
	dn      *netlab.Host
	gnb     *gnbsim.GNB
	smf     *client.Client
	nextUE  int
}

func newEdge(t *testing.T, hook datapath.Hook) *edge {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ed := &edge{t: t, lab: netlab.NewT(t)}
	var err error
	ed.gnbHost, err = ed.lab.Host("gnb")
	must(err)
	ed.dn, err = ed.lab.Host("dn")
	must(err)
	n3, err := ed.lab.Veth(ed.gnbHost, "eth0", "n3", "198.18.1.2/24", "2001:db8:1::2/64")
	must(err)
	n6, err := ed.lab.Veth(ed.dn, "eth0", "n6", "198.18.2.2/24", "2001:db8:2::2/64")
	must(err)
	must(ed.dn.AddRoute("198.19.0.0/16", "198.18.2.1"))
	must(ed.dn.AddRoute("2001:db8:100::/48", "2001:db8:2::1"))
	// The data network's packets must fit a tunnel on a 1500-octet n3.
	lk, err := ed.dn.Netlink().LinkByName("eth0")
	must(err)
	must(ed.dn.Netlink().LinkSetMTU(lk, 1400))
	if hook == datapath.TC {
		// At TC a local sender's checksums may still be the NIC's to
		// finish (CHECKSUM_PARTIAL): inside a tunnel nobody would.
		must(ed.dn.DisableTxChecksum("eth0"))
	}
	ed.e = nftest.Engine(t)
	port := nftest.FreeUDPPort(t)
	nftest.MustUpdate(t, ed.e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "upf1", Type: "upf", Hook: hook,
			Config: json.RawMessage(fmt.Sprintf(`{"pfcp":{"address":"127.0.0.1","port":%d,"heartbeat_seconds":-1},
				"ue_pools":[{"prefix":"198.19.0.0/16"},{"prefix":"2001:db8:100::/48"}]}`, port)),
			Ports: []cube.Port{
				{Name: "n3", Index: 0, Peer: n3, Addresses: []string{"198.18.1.1/24", "2001:db8:1::1/64"}},
				{Name: "n6", Index: 1, Peer: n6, Addresses: []string{"198.18.2.1/24", "2001:db8:2::1/64"},
					Config: json.RawMessage(`{"gateway":"198.18.2.2","gateway6":"2001:db8:2::2"}`)},
			}})
	})
	ed.gnb, err = gnbsim.New(ed.gnbHost, netip.MustParseAddr("198.18.1.2"), netip.MustParseAddr("198.18.1.1"))
	must(err)
	t.Cleanup(ed.gnb.Close)
	ed.smf, err = client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port))
	must(err)
	t.Cleanup(func() { ed.smf.Close() })
	_, err = ed.smf.Associate()
	must(err)
	return ed
}

// ue is a UE with its session.
type ue struct {
	*gnbsim.UE
	s      *client.Session
	v4, v6 netip.Addr
	dlTEID uint32
}

// sessionSpec shapes a UE's session: the SMF's rules beyond the default
// ones (FAR 1 up, FAR 2 down to the gNB, QER 1 with QFI 9, URR 1).
type sessionSpec struct {
	dual     bool       // an IPv6 prefix too
	extra    []*pfcp.IE // more rules
	urr      *client.URR
	qer      *client.QER
	farDL    *client.FAR // instead of the default downlink FAR
	cpSEID   uint64
	noAttach bool
	ue4      netip.Addr // the SMF's UE address instead of one the upf chooses
}

// attach sets up a session for a new UE and puts the UE behind the gNB.
func (ed *edge) attach(spec sessionSpec) *ue {
	t := ed.t
	t.Helper()
	ed.nextUE++
	dlTEID := uint32(0x9000 + ed.nextUE)
	urr := client.URR{ID: 1, Method: pfcp.MeasureVOLUM, Triggers: pfcp.TriggerPERIO, Period: 3600}
	if spec.urr != nil {
		urr = *spec.urr
	}
	qer := client.QER{ID: 1, QFI: 9}
	if spec.qer != nil {
		qer = *spec.qer
	}
	far := client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: dlTEID, Tunnel: netip.MustParseAddr("198.18.1.2")}
	if spec.farDL != nil {
		far = *spec.farDL
	}
	rules := []*pfcp.IE{
		client.PDR{ID: 1, Precedence: 200, Access: true, ChooseTEID: true, ChooseID: 1, ChooseUE4: !spec.ue4.IsValid(), UEIPv4: spec.ue4,
			ChooseUE6: spec.dual, QFI: 9, FAR: 1, URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
		client.PDR{ID: 2, Precedence: 200, ChooseUE4: !spec.ue4.IsValid(), UEIPv4: spec.ue4, ChooseUE6: spec.dual, FAR: 2,
			URRs: []uint32{1}, QERs: []uint32{1}}.IE(),
		client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE(),
		far.IE(), qer.IE(), urr.IE(),
	}
	rules = append(rules, spec.extra...)
	cp := spec.cpSEID
	if cp == 0 {
		cp = uint64(ed.nextUE)
	}
	s, _, err := ed.smf.Establish(cp, rules...)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.TEIDOf(1)
	addr, _ := s.UEAddrOf(1)
	u := &ue{s: s, v4: addr.IPv4, v6: addr.IPv6, dlTEID: dlTEID}
	if spec.ue4.IsValid() {
		u.v4 = spec.ue4
	}
	if spec.noAttach {
		return u
	}
	host, err := ed.lab.Host(fmt.Sprintf("ue%d", ed.nextUE))
	if err != nil {
		t.Fatal(err)
	}
	addrs := []string{u.v4.String() + "/32"}
	if u.v6.IsValid() {
		b := u.v6.As16()
		b[15] = 1
		u.v6 = netip.AddrFrom16(b)
		addrs = append(addrs, u.v6.String()+"/128")
	} else if err := host.Sysctl("net.ipv6.conf.all.disable_ipv6", "1"); err != nil {
		t.Fatal(err)
	}
	u.UE, err = ed.gnb.AddUE(host, gnbsim.UEConfig{Addresses: addrs, ULTEID: f.TEID, DLTEID: dlTEID, QFI: 9})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// counters are the cube's non-zero counters (for failure messages).
func (ed *edge) counters() []Counter {
	v, err := ed.e.View(tenant.Admin, "upf1", "counters")
	if err != nil {
		return nil
	}
	var out []Counter
	for _, c := range v.([]Counter) {
		if c.Value != 0 {
			out = append(out, c)
		}
	}
	return out
}

func (ed *edge) usage(u *ue) client.Usage {
	ed.t.Helper()
	resp, err := ed.smf.Modify(u.s, pfcp.Group(pfcp.IEQueryURR, pfcp.U32IE(pfcp.IEURRID, 1)))
	if err != nil {
		ed.t.Fatal(err)
	}
	r := client.UsageReports(resp)
	if len(r) != 1 {
		ed.t.Fatalf("%d usage reports", len(r))
	}
	return r[0]
}

func TestE2ETrafficBothWays(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			ed := newEdge(t, hook)
			u := ed.attach(sessionSpec{dual: true})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// ICMP, both families, from the UE to the data network and
			// back (once the neighbours on the way are resolved).
			for _, dst := range []string{"198.18.2.2", "2001:db8:2::2"} {
				warm(ctx, u.Host, dst)
				if err := u.Host.Ping(ctx, dst, 3); err != nil {
					t.Fatal(err)
				}
			}
			// UDP both ways, both families.
			for _, f := range []struct {
				from, to *netlab.Host
				dst      string
			}{{u.Host, ed.dn, "198.18.2.2"}, {ed.dn, u.Host, u.v4.String()}, {u.Host, ed.dn, "2001:db8:2::2"}, {ed.dn, u.Host, u.v6.String()}} {
				sent, recv, err := netlab.UDPFlow(ctx, f.from, f.to, f.dst, 7000, 500, 1000, 5000)
				if err != nil || recv != sent {
					t.Fatalf("UDP to %s: sent %d, received %d: %v", f.dst, sent, recv, err)
				}
			}
			// TCP both ways, both families.
			for _, f := range []struct {
				from, to *netlab.Host
				dst      string
			}{{u.Host, ed.dn, "198.18.2.2"}, {ed.dn, u.Host, u.v4.String()}, {u.Host, ed.dn, "2001:db8:2::2"}, {ed.dn, u.Host, u.v6.String()}} {
				if err := netlab.TCPTransfer(ctx, f.from, f.to, f.dst, 7001, 2<<20); err != nil {
					t.Fatalf("TCP to %s: %v", f.dst, err)
				}
			}
			// The downlink came through the gNB's tunnel with the QER's
			// QFI; the uplink used the TEID the UPF chose.
			pkts, _, qfi := ed.gnb.Tunnel(u.dlTEID)
			if pkts == 0 || qfi != 9 || ed.gnb.Unknown.Load() != 0 {
				t.Fatalf("downlink tunnel: %d packets, QFI %d; %d to unknown TEIDs", pkts, qfi, ed.gnb.Unknown.Load())
			}
			rep := ed.usage(u)
			if rep.Volume.UplinkPkts == 0 || rep.Volume.DownlinkPkts == 0 || rep.Volume.Uplink < 4<<20 || rep.Volume.Downlink < 4<<20 {
				t.Fatalf("usage %+v", rep.Volume)
			}
		})
	}
}

// warm pings dst until it answers (at most 30 s): the first packets of a
// path wait for its neighbours to be resolved, which a loaded machine may
// take longer than a ping's second to do.
func warm(ctx context.Context, h *netlab.Host, dst string) {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if h.Ping(ctx, dst, 1) == nil {
			return
		}
	}
}

// rawUDP sends n datagrams of size octets of payload from host to dst:port,
// each carrying its sequence number, paced at pps.
func rawUDP(t *testing.T, h *netlab.Host, dst netip.AddrPort, n, size, pps int) {
	t.Helper()
	pacedUDP(t, h, dst, n, size, pps)
}

// sendStats says how a paced send went: how long it took, and the longest
// gap between two of its datagrams (a sender the machine descheduled).
type sendStats struct {
	elapsed, maxGap time.Duration
}

// pacedUDP is rawUDP saying how the send went.
func pacedUDP(t *testing.T, h *netlab.Host, dst netip.AddrPort, n, size, pps int) sendStats {
	t.Helper()
	var c *net.UDPConn
	if err := h.Do(func() error {
		var err error
		c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One flow from one CPU, as a NIC's RSS delivers it: the veth runs the
	// upf on the sender's CPU, and punts (buffered packets) reach the
	// daemon through per-CPU rings, in order only within one CPU.
	restore, err := pinToThisCPU()
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	buf := make([]byte, size)
	start := time.Now()
	var st sendStats
	last := start
	for i := range n {
		binary.BigEndian.PutUint32(buf, uint32(i))
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		st.maxGap = max(st.maxGap, now.Sub(last))
		last = now
		if pps > 0 {
			if d := time.Until(start.Add(time.Duration(i+1) * time.Second / time.Duration(pps))); d > 0 {
				time.Sleep(d)
			}
		}
	}
	st.elapsed = time.Since(start)
	return st
}

// sink receives UDP datagrams in host on port and records their sequence
// numbers, in arrival order.
type sink struct {
	c    *net.UDPConn
	mu   sync.Mutex
	seqs []uint32
	n    atomic.Int64
	done chan struct{}
}

func newSink(t *testing.T, h *netlab.Host, port int) *sink {
	t.Helper()
	s := &sink{done: make(chan struct{})}
	if err := h.Do(func() error {
		var err error
		s.c, err = net.ListenUDP("udp", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.done)
		buf := make([]byte, 65536)
		for {
			n, err := s.c.Read(buf)
			if err != nil {
				return
			}
			if n >= 4 {
				s.mu.Lock()
				s.seqs = append(s.seqs, binary.BigEndian.Uint32(buf))
				s.mu.Unlock()
			}
			s.n.Add(1)
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *sink) close() { s.c.Close(); <-s.done }

// settled reads a counter of what arrives until it has not moved for
// 300 ms (at most 10 s): what was in flight when the sender stopped (in
// queues, or in a receiver a busy machine holds up) is counted.
func settled(read func() uint64) uint64 {
	v := read()
	for end, still := time.Now().Add(10*time.Second), time.Now(); time.Now().Before(end) && time.Since(still) < 300*time.Millisecond; {
		time.Sleep(50 * time.Millisecond)
		if w := read(); w != v {
			v, still = w, time.Now()
		}
	}
	return v
}

// wait waits (at most 30 s) until n datagrams arrived.
func (s *sink) wait(n int) int {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && s.n.Load() < int64(n); {
		time.Sleep(20 * time.Millisecond)
	}
	return int(s.n.Load())
}

func (s *sink) received() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint32(nil), s.seqs...)
}

func TestE2ESDFFiltersSteerFlows(t *testing.T) {
	testenv.E2E(t)
	ed := newEdge(t, datapath.XDP)
	// Video (UDP from the data network's port 5000) gets its own QoS flow
	// and tunnel; UDP to the UE's port 6000 is dropped.
	videoTEID := uint32(0x7777)
	u := ed.attach(sessionSpec{extra: []*pfcp.IE{
		client.PDR{ID: 3, Precedence: 50, ChooseUE4: true, SDF: []string{"permit out 17 from 198.18.2.2 5000 to assigned"}, FAR: 3, QERs: []uint32{2}}.IE(),
		client.PDR{ID: 4, Precedence: 60, ChooseUE4: true, SDF: []string{"permit out 17 from any to assigned 6000"}, FAR: 4}.IE(),
		client.FAR{ID: 3, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess, TunnelTEID: videoTEID, Tunnel: netip.MustParseAddr("198.18.1.2")}.IE(),
		client.FAR{ID: 4, Action: pfcp.ActionDROP}.IE(),
		client.QER{ID: 2, QFI: 5}.IE(),
	}})
	ed.gnb.AddTunnel(u.UE, videoTEID)
	video, other, blocked := newSink(t, u.Host, 5001), newSink(t, u.Host, 5002), newSink(t, u.Host, 6000)
	send := func(sport, dport, n int) {
		var c *net.UDPConn
		if err := ed.dn.Do(func() error {
			var err error
			c, err = net.DialUDP("udp", &net.UDPAddr{Port: sport}, &net.UDPAddr{IP: u.v4.AsSlice(), Port: dport})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range n {
			c.Write([]byte{0, 0, 0, byte(i)})
		}
	}
	send(5000, 5001, 20) // video
	send(5003, 5002, 20) // default flow
	send(5003, 6000, 20) // filtered out
	if video.wait(20) != 20 || other.wait(20) != 20 {
		t.Fatalf("received %d video, %d other datagrams", video.n.Load(), other.n.Load())
	}
	time.Sleep(200 * time.Millisecond)
	if blocked.n.Load() != 0 {
		t.Fatalf("%d datagrams of a dropped flow arrived", blocked.n.Load())
	}
	vp, _, vq := ed.gnb.Tunnel(videoTEID)
	dp, _, dq := ed.gnb.Tunnel(u.dlTEID)
	if vp != 20 || vq != 5 || dp < 20 || dq != 9 {
		t.Fatalf("video tunnel %d packets QFI %d; default tunnel %d QFI %d", vp, vq, dp, dq)
	}
}

func TestE2EMBRHoldsTheRate(t *testing.T) {
	testenv.E2E(t)
	ed := newEdge(t, datapath.XDP)
	// 8 Mbit/s downlink; the data network offers twice that for 3 s.
	const mbr = 8000 // kbit/s
	u := ed.attach(sessionSpec{qer: &client.QER{ID: 1, QFI: 9, MBRDL: mbr}})
	s := newSink(t, u.Host, 5005)
	const size = 1172 // + 28: 1200-octet IP packets
	const pps = 2 * mbr * 1000 / 8 / 1200
	const secs = 3
	// The bucket holds 50 ms of credit: a sender the shared machine stalls
	// for longer offers less than the MBR meanwhile, and the delivered rate
	// says nothing about the QER. Such a run is repeated, not judged.
	const burst = 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, before, _ := ed.gnb.Tunnel(u.dlTEID)
		st := pacedUDP(t, ed.dn, netip.AddrPortFrom(u.v4, 5005), pps*secs, size, pps)
		after := settled(func() uint64 { _, b, _ := ed.gnb.Tunnel(u.dlTEID); return b })
		if st.maxGap > burst && attempt < 4 {
			t.Logf("attempt %d: the sender stalled for %v (more than the bucket's %v): again", attempt, st.maxGap, burst)
			time.Sleep(time.Second) // (the bucket refills)
			continue
		}
		secs := st.elapsed.Seconds()
		rate := float64(after-before) * 8 / secs / 1000 // kbit/s of IP packets
		// The bucket lets a burst of 50 ms through on top of the rate.
		want := float64(mbr) * (1 + burst.Seconds()/secs)
		t.Logf("attempt %d: %.0f kbit/s over %v (longest sender gap %v)", attempt, rate, st.elapsed, st.maxGap)
		if rate < want*0.9 || rate > want*1.1 {
			t.Fatalf("%.0f kbit/s through an MBR of %d kbit/s (offered %d kbit/s; longest sender gap %v)", rate, mbr, 2*mbr, st.maxGap)
		}
		break
	}
	if s.n.Load() == 0 {
		t.Fatal("nothing reached the UE")
	}
}

func TestE2EVolumeThresholdReport(t *testing.T) {
	testenv.E2E(t)
	ed := newEdge(t, datapath.XDP)
	// Report after 10,000 octets: ten 1000-octet IP packets up.
	u := ed.attach(sessionSpec{urr: &client.URR{ID: 1, Method: pfcp.MeasureVOLUM, Triggers: pfcp.TriggerVOLTH, VolumeThreshold: 10000}})
	sk := newSink(t, ed.dn, 5006)
	rawUDP(t, u.Host, netip.MustParseAddrPort("198.18.2.2:5006"), 10, 1000-28, 0)
	if sk.wait(10) != 10 {
		t.Fatalf("%d of 10 datagrams arrived", sk.n.Load())
	}
	select {
	case m := <-ed.smf.Reports():
		reps := client.UsageReports(m)
		if len(reps) != 1 || reps[0].Trigger&pfcp.TriggerVOLTH == 0 {
			t.Fatalf("report %+v", reps)
		}
		v := reps[0].Volume
		if v.Total != 10000 || v.Uplink != 10000 || v.Downlink != 0 || v.UplinkPkts != 10 {
			t.Fatalf("reported %+v, sent 10 packets of 1000 octets up", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no usage report")
	}
}

func TestE2EGateClosedByModification(t *testing.T) {
	testenv.E2E(t)
	ed := newEdge(t, datapath.XDP)
	u := ed.attach(sessionSpec{})
	s := newSink(t, u.Host, 5007)
	dst := netip.AddrPortFrom(u.v4, 5007)
	rawUDP(t, ed.dn, dst, 20, 100, 0)
	if s.wait(20) != 20 {
		t.Fatalf("%d of 20 before closing the gate", s.n.Load())
	}
	if _, err := ed.smf.Modify(u.s, client.QER{ID: 1, QFI: 9, DLClosed: true}.UpdateIE()); err != nil {
		t.Fatal(err)
	}
	// Every packet sent after the answer is dropped.
	rawUDP(t, ed.dn, dst, 20, 100, 0)
	time.Sleep(300 * time.Millisecond)
	if n := s.n.Load(); n != 20 {
		t.Fatalf("%d packets passed a closed gate", n-20)
	}
}

func TestE2EBufferThenForwardInOrder(t *testing.T) {
	testenv.E2E(t)
	ed := newEdge(t, datapath.XDP)
	// The UE is idle: downlink packets are buffered, and the SMF is told
	// of the first one.
	farBuff := client.FAR{ID: 2, Action: pfcp.ActionBUFF | pfcp.ActionNOCP}
	u := ed.attach(sessionSpec{farDL: &farBuff})
	s := newSink(t, u.Host, 5008)
	rawUDP(t, ed.dn, netip.AddrPortFrom(u.v4, 5008), 30, 200, 1000)
	// One Downlink Data Report for the 30 packets.
	select {
	case m := <-ed.smf.Reports():
		rt, _ := m.IEs.Find(pfcp.IEReportType).U8()
		dr := m.IEs.Find(pfcp.IEDownlinkDataReport)
		if rt != pfcp.ReportDLDR || dr == nil {
			t.Fatalf("report type %d", rt)
		}
		if pdr, _ := dr.Children.Find(pfcp.IEPDRID).U16(); pdr != 2 {
			t.Fatalf("downlink data report for PDR %d", pdr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no downlink data report")
	}
	select {
	case m := <-ed.smf.Reports():
		t.Fatalf("a second report: %+v", m)
	case <-time.After(500 * time.Millisecond):
	}
	if s.n.Load() != 0 {
		t.Fatal("buffered packets delivered early")
	}
	// Paging done: forward to the gNB. The 30 arrive, in order.
	if _, err := ed.smf.Modify(u.s, client.FAR{ID: 2, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceAccess,
		TunnelTEID: u.dlTEID, Tunnel: netip.MustParseAddr("198.18.1.2")}.UpdateIE()); err != nil {
		t.Fatal(err)
	}
	if s.wait(30) != 30 {
		t.Fatalf("%d of 30 buffered packets delivered; %v", s.n.Load(), ed.counters())
	}
	for i, seq := range s.received() {
		if seq != uint32(i) {
			t.Fatalf("out of order: %v", s.received())
		}
	}
}

func TestE2EDeletionStopsTraffic(t *testing.T) {
	testenv.E2E(t)
	ed := newEdge(t, datapath.XDP)
	u := ed.attach(sessionSpec{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	warm(ctx, u.Host, "198.18.2.2")
	if err := u.Host.Ping(ctx, "198.18.2.2", 2); err != nil {
		t.Fatal(err)
	}
	resp, err := ed.smf.Delete(u.s)
	if err != nil {
		t.Fatal(err)
	}
	if reps := client.UsageReports(resp); len(reps) != 1 || reps[0].Volume.UplinkPkts < 2 {
		t.Fatalf("final report %+v", reps)
	}
	if err := u.Host.Ping(ctx, "198.18.2.2", 2); err == nil {
		t.Fatal("traffic still flows after the session's deletion")
	}
	s := newSink(t, u.Host, 5009)
	rawUDP(t, ed.dn, netip.AddrPortFrom(u.v4, 5009), 10, 100, 0)
	time.Sleep(300 * time.Millisecond)
	if s.n.Load() != 0 {
		t.Fatal("downlink still delivered")
	}
}

// A UE the upf chose from its pool (the downlink finds it by the pool's
// array) and one the SMF gave outside every pool (by hash) both get their
// downlink; pools that would strand the pooled UE are refused through the
// engine, and traffic goes on.
func TestE2EPooledAndUnpooledUEs(t *testing.T) {
	testenv.E2E(t)
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) { pooledAndUnpooledUEs(t, hook) })
	}
}

func pooledAndUnpooledUEs(t *testing.T, hook datapath.Hook) {
	ed := newEdge(t, hook)
	if err := ed.dn.AddRoute("198.18.200.0/24", "198.18.2.1"); err != nil {
		t.Fatal(err)
	}
	pooled := ed.attach(sessionSpec{})
	outside := ed.attach(sessionSpec{ue4: netip.MustParseAddr("198.18.200.9")})
	if !netip.MustParsePrefix("198.19.0.0/16").Contains(pooled.v4) {
		t.Fatalf("the upf chose %s, outside its pool", pooled.v4)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	downlink := func(when string) {
		t.Helper()
		for _, u := range []*ue{pooled, outside} {
			warm(ctx, u.Host, "198.18.2.2")
			sent, recv, err := netlab.UDPFlow(ctx, ed.dn, u.Host, u.v4.String(), 7000, 200, 500, 2000)
			if err != nil || recv != sent {
				t.Fatalf("%s: downlink UDP to %s: sent %d, received %d: %v; counters %v", when, u.v4, sent, recv, err, ed.counters())
			}
		}
	}
	downlink("pooled and outside")
	err := ed.e.Update(func(tp *cube.Topology) error {
		var cfg map[string]any
		if err := json.Unmarshal(tp.Lookup("upf1").Config, &cfg); err != nil {
			return err
		}
		cfg["ue_pools"] = []map[string]string{{"prefix": "198.19.255.0/24"}, {"prefix": "2001:db8:100::/48"}}
		raw, _ := json.Marshal(cfg)
		return tp.SetConfig("upf1", raw)
	})
	if err == nil || !strings.Contains(err.Error(), "UE address "+pooled.v4.String()+" of session") {
		t.Fatalf("shrinking the pool under a session: %v", err)
	}
	downlink("after the refused pools")
}
