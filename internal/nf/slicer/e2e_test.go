package slicer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// The end-to-end rig: host s (198.18.0.10) sends UDP to host d
// (198.18.0.20) through slicer sl (TC), whose slices a (UDP port 6001) and
// b (6002) lead into ports ia and ib of a portfwd cube mg that sends both
// out of vd, d's veth: one bottleneck, the HTB tree on vd's egress.
type e2e struct {
	e      *engine.Engine
	s, d   *netlab.Host
	vs, vd string
}

const (
	linkBps  = 16e6 // the bottleneck the slicer shapes at
	frameLen = 1042 // 1000 bytes of UDP payload, as HTB and the policer count them
	payload  = 1000
)

func setupE2E(t *testing.T, shape bool, slices ...Slice) *e2e {
	t.Helper()
	lab := netlab.NewT(t)
	r := &e2e{}
	var err error
	if r.s, err = lab.Host("s"); err != nil {
		t.Fatal(err)
	}
	if r.d, err = lab.Host("d"); err != nil {
		t.Fatal(err)
	}
	if r.vs, err = lab.Veth(r.s, "eth0", "vs", "198.18.0.10/24"); err != nil {
		t.Fatal(err)
	}
	if r.vd, err = lab.Veth(r.d, "eth0", "vd", "198.18.0.20/24"); err != nil {
		t.Fatal(err)
	}
	mac, err := r.d.MAC("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.s.SetNeigh("eth0", "198.18.0.20", mac.String()); err != nil {
		t.Fatal(err)
	}
	set := Settings{Uplink: "up"}
	if shape {
		set.Egress = []Egress{{Interface: r.vd, RateBps: linkBps}}
	}
	cfg, _ := json.Marshal(set)
	rows := map[string]json.RawMessage{}
	for _, sl := range slices {
		rows[sl.Name] = nftest.Entry(sl)
	}
	r.e = nftest.Engine(t)
	nftest.MustUpdate(t, r.e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: cfg,
			Tables: map[string]map[string]json.RawMessage{"slices": rows},
			Ports:  []cube.Port{{Name: "up", Index: 0, Peer: r.vs}, {Name: "a", Index: 1}, {Name: "b", Index: 2}}}); err != nil {
			return err
		}
		sl, _ := tp.Edit("sl")
		sl.Ports[1].Peer, sl.Ports[2].Peer = "mg:ia", "mg:ib"
		tp.Put(&cube.Cube{Name: "mg", Type: "portfwd", Hook: "tc",
			Ports: []cube.Port{{Name: "ia", Index: 0, Peer: "sl:a"}, {Name: "ib", Index: 1, Peer: "sl:b"}, {Name: "out", Index: 2, Peer: r.vd}},
			Tables: map[string]map[string]json.RawMessage{"rules": {
				"ia":  json.RawMessage(`{"in_port":"ia","out_port":"out"}`),
				"ib":  json.RawMessage(`{"in_port":"ib","out_port":"out"}`),
				"out": json.RawMessage(`{"in_port":"out","out_port":"ia"}`),
			}}})
		return nil
	})
	return r
}

func (r *e2e) status(t *testing.T) *Status {
	t.Helper()
	v, err := r.e.View(tenant.Admin, "sl", "status")
	if err != nil {
		t.Fatal(err)
	}
	return v.(*Status)
}

// flows runs paced UDP flows of payload bytes from r.s to r.d at the same
// time, each pps datagrams/s for dur (netlab.PacedUDP).
func (r *e2e) flows(t *testing.T, dur time.Duration, ports, pps []int) []netlab.FlowResult {
	t.Helper()
	var fl []netlab.PacedFlow
	for i, p := range ports {
		fl = append(fl, netlab.PacedFlow{Port: p, PPS: pps[i], Payload: payload})
	}
	out, err := netlab.PacedUDP(context.Background(), r.s, r.d, net.IPv4(198, 18, 0, 20), dur, fl)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pps(bps float64) int { return int(bps / 8 / frameLen) }

// A slice with a guaranteed minimum keeps its offered load (under its
// guarantee) while another slice floods the same egress at three times the
// link rate; without the slices' classes (one HTB class for all), it loses
// most of it.
func TestE2EGuaranteeSurvivesFlood(t *testing.T) {
	testenv.E2E(t)
	r := setupE2E(t, true,
		Slice{Name: "greedy", ID: 1, Port: "a", Tenant: "red", Rules: []Rule{{Proto: "udp", DPort: 6001}}},
		Slice{Name: "victim", ID: 2, Port: "b", Tenant: "blue", MinBps: 6e6, Rules: []Rule{{Proto: "udp", DPort: 6002}}})
	const dur = 4 * time.Second
	// A victim sender the shared machine stalls catches up in a burst that
	// its class's queue need not hold: a run that lost victim datagrams
	// with such a stall says nothing about the guarantee, and is repeated.
	const stall = 50 * time.Millisecond
	var res []netlab.FlowResult
	var before *Status
	for attempt := 1; ; attempt++ {
		before = r.status(t)
		res = r.flows(t, dur, []int{6001, 6002}, []int{pps(3 * linkBps), pps(4e6)})
		if v := res[1]; float64(v.Recv) >= 0.95*float64(v.Sent) || v.MaxGap <= stall || attempt == 4 {
			break
		}
		t.Logf("attempt %d: victim got %d of %d, its sender stalled for %v: again", attempt, res[1].Recv, res[1].Sent, res[1].MaxGap)
	}
	greedy, victim := res[0], res[1]
	t.Logf("greedy: sent %d received %d; victim: sent %d received %d (p99 %v); longest sender gaps %v, %v", greedy.Sent, greedy.Recv, victim.Sent, victim.Recv, victim.P99(), greedy.MaxGap, victim.MaxGap)
	if float64(victim.Recv) < 0.95*float64(victim.Sent) {
		t.Errorf("victim slice got %d of %d datagrams (%.1f%%) while the other flooded: want >= 95%%", victim.Recv, victim.Sent, 100*float64(victim.Recv)/float64(victim.Sent))
	}
	// the flood was real: the link was full and the greedy slice lost most
	if float64(greedy.Recv) > 0.6*float64(greedy.Sent) {
		t.Errorf("greedy slice got %d of %d: the link was not contended", greedy.Recv, greedy.Sent)
	}
	st := r.status(t)
	drops := func(st *Status, i int) uint64 { // of the judged run's flows only
		if i >= len(st.Slices) || len(st.Slices[i].Egress) == 0 {
			return 0
		}
		return st.Slices[i].Egress[0].Drops
	}
	if st.Shaping != "htb" || len(st.Slices) != 2 || len(st.Slices[0].Egress) == 0 || len(st.Slices[1].Egress) == 0 ||
		drops(st, 0) == drops(before, 0) || drops(st, 1) != drops(before, 1) {
		t.Errorf("status: shaping %s, slices %+v (before the flows: %+v)", st.Shaping, st.Slices, before.Slices)
	}

	// The negative: the same traffic through one HTB class of the link rate
	// (what the interface has without the slices' classes).
	nftest.MustUpdate(t, r.e, func(tp *cube.Topology) error {
		c, err := tp.Edit("sl")
		if err != nil {
			return err
		}
		c.Config = json.RawMessage(`{"uplink":"up"}`)
		for _, n := range []string{"greedy", "victim"} {
			var sl Slice
			json.Unmarshal(c.Tables["slices"][n], &sl)
			sl.MinBps = 0
			c.SetRow("slices", n, nftest.Entry(sl))
		}
		return nil
	})
	lk, err := netlink.LinkByName(r.vd)
	if err != nil {
		t.Fatal(err)
	}
	q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: lk.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT})
	q.Defcls = 1
	if err := netlink.QdiscReplace(q); err != nil {
		t.Fatal(err)
	}
	if err := netlink.ClassAdd(netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: lk.Attrs().Index, Parent: q.Handle, Handle: netlink.MakeHandle(1, 1)},
		netlink.HtbClassAttrs{Rate: linkBps, Ceil: linkBps})); err != nil {
		t.Fatal(err)
	}
	res = r.flows(t, dur, []int{6001, 6002}, []int{pps(3 * linkBps), pps(4e6)})
	victim = res[1]
	t.Logf("without slice classes: victim sent %d received %d", victim.Sent, victim.Recv)
	if float64(victim.Recv) > 0.8*float64(victim.Sent) {
		t.Errorf("without the slices' classes the victim still got %d of %d: the test cannot tell guarantees from luck", victim.Recv, victim.Sent)
	}
}

// A slice limited to R delivers R (within 5%) of a load three times R: the
// policer at ingress, no qdisc involved. The rate is measured over the
// sender's real window (first to last datagram sent).
func TestE2ERateLimitDeliversR(t *testing.T) {
	testenv.E2E(t)
	const rate = 8e6
	// The bucket holds 50 ms of credit. A sender the shared machine stalls
	// for longer offers less than R meanwhile and then catches up in a
	// burst the bucket cannot hold: the admitted rate then says nothing
	// about the policer. Such a run is repeated, not judged.
	const burst = 50 * time.Millisecond
	r := setupE2E(t, false,
		Slice{Name: "capped", ID: 1, Port: "a", RateBps: rate, BurstBytes: uint64(rate / 8 * burst.Seconds()), Rules: []Rule{{Proto: "udp", DPort: 6001}}})
	for attempt := 1; ; attempt++ {
		before := r.status(t).Slices[0]
		res := r.flows(t, 5*time.Second, []int{6001}, []int{pps(3 * rate)})[0]
		after := r.status(t).Slices[0]
		if res.MaxGap > burst && attempt < 4 {
			t.Logf("attempt %d: the sender stalled for %v (more than the bucket's %v): again", attempt, res.MaxGap, burst)
			time.Sleep(time.Second)
			continue
		}
		inBytes, inPackets := after.InBytes-before.InBytes, after.InPackets-before.InPackets
		got := float64(inBytes*8) / res.Elapsed.Seconds()
		t.Logf("attempt %d: offered %d datagrams in %v (longest sender gap %v); admitted %d bytes = %.3f Mbit/s; received %d; policed %d",
			attempt, res.Sent, res.Elapsed, res.MaxGap, inBytes, got/1e6, res.Recv, after.PolicePackets-before.PolicePackets)
		if got < 0.95*rate || got > 1.05*rate {
			t.Errorf("slice limited to %s delivered %.3f Mbit/s (longest sender gap %v)", Bits(rate), got/1e6, res.MaxGap)
		}
		if uint64(res.Recv) < inPackets*99/100 {
			t.Errorf("received %d of the %d admitted", res.Recv, inPackets)
		}
		if float64(res.Sent) < 2*float64(res.Recv) {
			t.Errorf("sent %d, received %d: the load was not three times the limit", res.Sent, res.Recv)
		}
		return
	}
}

// Under contention, a priority-0 slice that stays within what it can get
// sees a far lower p99 delay than a best-effort slice (priority 7) that
// floods; and when both want more than the link, the spare capacity goes to
// the high-priority class, as its HTB counters show.
func TestE2EPriorityOrdersDelayAndSpareCapacity(t *testing.T) {
	testenv.E2E(t)
	r := setupE2E(t, true,
		Slice{Name: "urgent", ID: 1, Port: "a", MinBps: 2e6, Priority: intp(0), Rules: []Rule{{Proto: "udp", DPort: 6001}}},
		Slice{Name: "bulk", ID: 2, Port: "b", MinBps: 2e6, Priority: intp(7), Rules: []Rule{{Proto: "udp", DPort: 6002}}})
	res := r.flows(t, 3*time.Second, []int{6001, 6002}, []int{pps(4e6), pps(3 * linkBps)})
	urgent, bulk := res[0], res[1]
	t.Logf("urgent: %d/%d p99 %v; bulk: %d/%d p99 %v", urgent.Recv, urgent.Sent, urgent.P99(), bulk.Recv, bulk.Sent, bulk.P99())
	if urgent.P99()*5 > bulk.P99() {
		t.Errorf("p99 delay: urgent %v, bulk %v: want urgent's at most a fifth", urgent.P99(), bulk.P99())
	}
	before := r.status(t)
	// both over the link: spare capacity to priority 0
	r.flows(t, 3*time.Second, []int{6001, 6002}, []int{pps(1.5 * linkBps), pps(1.5 * linkBps)})
	after := r.status(t)
	sent := func(i int) uint64 { return after.Slices[i].Egress[0].Bytes - before.Slices[i].Egress[0].Bytes }
	t.Logf("HTB class bytes while both flooded: urgent %d, bulk %d", sent(0), sent(1))
	if sent(0) < 3*sent(1) {
		t.Errorf("class %s sent %d bytes, class %s %d: want the priority-0 class at least three times the other's",
			after.Slices[0].Class, sent(0), after.Slices[1].Class, sent(1))
	}
}

// Two tenants' slices: each tenant sees and changes only its own cubes; the
// slicer (the administrator's) is neither visible nor changeable by them, so
// a tenant can neither touch another's slice nor raise its own guarantees.
func TestTenantsCannotChangeSlices(t *testing.T) {
	testenv.E2E(t)
	r := setupE2E(t, true,
		Slice{Name: "red", ID: 1, Port: "a", Tenant: "red", MinBps: 2e6, Rules: []Rule{{Proto: "udp", DPort: 6001}}})
	actor := tenant.Of("red")
	err := r.e.UpdateAs(context.Background(), actor, func(tp *cube.Topology, _ tenant.Scope) error {
		c, err := tp.Edit("sl")
		if err != nil {
			return err
		}
		c.SetRow("slices", "red", nftest.Entry(Slice{Name: "red", ID: 1, Port: "a", Tenant: "red", MinBps: 15e6}))
		return nil
	})
	if !errors.Is(err, cube.ErrNotFound) {
		t.Fatalf("tenant red raising its guarantee: %v, want not found", err)
	}
	if _, err := r.e.View(actor, "sl", "status"); !errors.Is(err, cube.ErrNotFound) {
		t.Fatalf("tenant red reading the slicer: %v, want not found", err)
	}
	st := r.status(t)
	if len(st.Slices) != 1 || st.Slices[0].Name != "red" {
		t.Fatal(fmt.Sprint(st.Slices))
	}
}

// Two tenants with the same addresses (198.18.0.10 behind 198.18.0.1, a
// server at 198.19.0.2) share one entry interface, told apart by VLAN: each
// VLAN is a slice leading into the tenant's own router. Each tenant's
// traffic reaches only its own server, and a flood from one is never seen
// by the other's router or server.
func TestE2ESegregationOverlappingAddresses(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	// The shared entry is an 802.1Q trunk (a veth pair, ta-tb). Its far
	// side is an access switch: another slicer, acc, whose VLAN slices put
	// each tenant's client on its VLAN (this kernel has no 8021q and no
	// VLAN-aware bridge).
	ta, tb, err := lab.RootVeth("ta", "tb")
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]*netlab.Host{}
	servers := map[string]*netlab.Host{}
	cliIf, srvIf := map[string]string{}, map[string]string{}
	for _, name := range []string{"red", "blue"} {
		h, err := lab.Host("c" + name)
		if err != nil {
			t.Fatal(err)
		}
		hosts[name] = h
		if cliIf[name], err = lab.Veth(h, "eth0", "c"+name, "198.18.0.10/24"); err != nil {
			t.Fatal(err)
		}
		if err := h.AddRoute("default", "198.18.0.1"); err != nil {
			t.Fatal(err)
		}
		s, err := lab.Host("s" + name)
		if err != nil {
			t.Fatal(err)
		}
		servers[name] = s
		if srvIf[name], err = lab.Veth(s, "eth0", "s"+name, "198.19.0.2/24"); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRoute("default", "198.19.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		rows := map[string]json.RawMessage{
			"red":  nftest.Entry(Slice{Name: "red", ID: 1, Tenant: "red", Port: "red", Rules: []Rule{{VLAN: intp(10)}}}),
			"blue": nftest.Entry(Slice{Name: "blue", ID: 2, Tenant: "blue", Port: "blue", Rules: []Rule{{VLAN: intp(20)}}}),
		}
		tp.Put(&cube.Cube{Name: "sl", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"up"}`),
			Tables: map[string]map[string]json.RawMessage{"slices": rows},
			Ports:  []cube.Port{{Name: "up", Index: 0, Peer: tb}, {Name: "red", Index: 1, Peer: "rred:p0"}, {Name: "blue", Index: 2, Peer: "rblue:p0"}}})
		tp.Put(&cube.Cube{Name: "acc", Type: "slicer", Hook: "tc", Config: json.RawMessage(`{"uplink":"trunk"}`),
			Tables: map[string]map[string]json.RawMessage{"slices": {
				"red":  nftest.Entry(Slice{Name: "red", ID: 1, Port: "red", Rules: []Rule{{VLAN: intp(10)}}}),
				"blue": nftest.Entry(Slice{Name: "blue", ID: 2, Port: "blue", Rules: []Rule{{VLAN: intp(20)}}}),
			}},
			Ports: []cube.Port{{Name: "trunk", Index: 0, Peer: ta}, {Name: "red", Index: 1, Peer: cliIf["red"]}, {Name: "blue", Index: 2, Peer: cliIf["blue"]}}})
		for _, name := range []string{"red", "blue"} {
			tp.Put(&cube.Cube{Name: "r" + name, Type: "router", Hook: "tc", Tenant: name,
				Ports: []cube.Port{
					{Name: "p0", Index: 0, Peer: "sl:" + name, Addresses: []string{"198.18.0.1/24"}},
					{Name: "p1", Index: 1, Peer: srvIf[name], Addresses: []string{"198.19.0.1/24"}},
				}})
		}
		return nil
	})
	for _, name := range []string{"red", "blue"} {
		if err := hosts[name].Ping(ctx, "198.19.0.2", 2); err != nil {
			t.Fatalf("%s: ping its server through its slice: %v", name, err)
		}
	}
	before, err := e.Stats(tenant.Admin, "rblue")
	if err != nil {
		t.Fatal(err)
	}
	// red floods its server; blue's server listens on the same address and
	// port in its own namespace
	var blueGot int
	blueRx, err := listenCount(servers["blue"], 7000, &blueGot)
	if err != nil {
		t.Fatal(err)
	}
	sent, recv, err := netlab.UDPFlow(ctx, hosts["red"], servers["red"], "198.19.0.2", 7000, 5000, 500, 10000)
	if err != nil {
		t.Fatal(err)
	}
	blueRx()
	after, err := e.Stats(tenant.Admin, "rblue")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("red flood: sent %d, red's server got %d; blue's server got %d", sent, recv, blueGot)
	if recv < sent*95/100 {
		t.Errorf("red's server got %d of %d", recv, sent)
	}
	if blueGot != 0 {
		t.Errorf("blue's server received %d datagrams of red's flood", blueGot)
	}
	var rx0, rx1 uint64
	for _, p := range before.Ports {
		rx0 += p.RxPackets
	}
	for _, p := range after.Ports {
		rx1 += p.RxPackets
	}
	if rx1-rx0 > 20 { // a few ARP refreshes at most, never the flood
		t.Errorf("blue's router saw %d frames during red's flood", rx1-rx0)
	}
	// every hop's counters carry the slice its chain belongs to
	sliceOf := map[string]string{}
	for _, cc := range e.Counters(func(*cube.Cube) bool { return true }) {
		sliceOf[cc.Cube] = cc.Slice
	}
	if sliceOf["rred"] != "red" || sliceOf["rblue"] != "blue" || sliceOf["sl"] != "" || sliceOf["acc"] != "" {
		t.Errorf("slices of the cubes' counters: %v", sliceOf)
	}
	st, _ := e.View(tenant.Admin, "sl", "status")
	for _, s := range st.(*Status).Slices {
		t.Logf("slice %s: in %d return %d", s.Name, s.InPackets, s.ReturnPackets)
	}
}

// listenCount counts datagrams arriving at port in h until the returned
// stop is called.
func listenCount(h *netlab.Host, port int, n *int) (stop func(), err error) {
	var c *net.UDPConn
	if err := h.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		return err
	}); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFromUDP(buf); err != nil {
				return
			}
			*n++
		}
	}()
	return func() { time.Sleep(300 * time.Millisecond); c.Close(); <-done }, nil
}
