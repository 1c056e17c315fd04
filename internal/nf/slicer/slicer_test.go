package slicer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/vishvananda/netlink"
)

func intp(v int) *int { return &v }

// model is a slicer with entry ports up (0) and up2 (1) and slice ports
// s1..s8 (indexes 11..18).
func model(hook datapath.Hook, set Settings, slices ...Slice) *cube.Cube {
	rows := map[string]json.RawMessage{}
	for _, s := range slices {
		rows[s.Name] = nftest.Entry(s)
	}
	ports := []cube.Port{{Name: "up", Index: 0}, {Name: "up2", Index: 1}}
	for i := 1; i <= 8; i++ {
		ports = append(ports, cube.Port{Name: "s" + string(rune('0'+i)), Index: 10 + i})
	}
	cfg, _ := json.Marshal(set)
	return &cube.Cube{Name: "sl", Type: "slicer", Hook: hook, Ports: ports, Config: cfg,
		Tables: map[string]map[string]json.RawMessage{"slices": rows}}
}

var hooks = []struct {
	hook       datapath.Hook
	sent, drop uint32
}{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

// gtpu is a G-PDU with TEID teid carrying an IPv4 UDP datagram from ue.
func gtpu(teid uint32, ue string) []byte {
	inner := nftest.UDP4(ue, "198.19.9.9", 4000, 5000, []byte("payload"))[14:]
	g := make([]byte, 8, 8+len(inner))
	g[0], g[1] = 0x30, 0xff
	binary.BigEndian.PutUint16(g[2:], uint16(len(inner)))
	binary.BigEndian.PutUint32(g[4:], teid)
	return nftest.UDP4("198.18.100.1", "198.18.100.2", 2152, 2152, append(g, inner...))
}

func withDSCP(frame []byte, dscp byte) []byte {
	f := append([]byte(nil), frame...)
	f[15] = dscp << 2
	nftest.FixIPv4Checksum(f)
	return f
}

// Every rule kind steers its frames into its slice's port, at both hooks;
// what matches nothing follows the default, or is dropped without one.
func TestClassifyEachRuleKind(t *testing.T) {
	slices := []Slice{
		{Name: "teid", ID: 1, Port: "s1", Rules: []Rule{{TEID: "0x1000-0x1fff"}}},
		{Name: "ue", ID: 2, Port: "s2", Rules: []Rule{{UEPool: "198.18.200.0/24"}}},
		{Name: "vlan", ID: 3, Port: "s3", Rules: []Rule{{VLAN: intp(10)}}},
		{Name: "l4", ID: 4, Port: "s4", Rules: []Rule{{Proto: "udp", DPort: 5060}, {Proto: "sctp"}}},
		{Name: "dst", ID: 5, Port: "s5", Rules: []Rule{{Dst: "198.19.5.0/24"}, {Dst: "2001:db8:5::/48"}}},
		{Name: "src", ID: 6, Port: "s6", Rules: []Rule{{Src: "198.18.6.0/24"}}},
		{Name: "dscp", ID: 7, Port: "s7", Rules: []Rule{{DSCP: intp(46)}}},
		{Name: "port", ID: 8, Port: "s8", Rules: []Rule{{InPort: "up2"}}},
	}
	plain := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, nil)
	cases := []struct {
		name  string
		in    string
		frame []byte
		want  int // port index, -1 dropped
	}{
		{"teid in range", "up", gtpu(0x1234, "198.18.77.1"), 11},
		{"teid outside: ue pool", "up", gtpu(0x2000, "198.18.200.7"), 12},
		{"vlan 10", "up", nftest.VLANTagged(plain, 1), 13},
		{"udp 5060", "up", nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 5060, nil), 14},
		{"sctp any port", "up", sctp4(), 14},
		{"dst v4", "up", nftest.UDP4("198.18.1.1", "198.19.5.77", 1000, 2000, nil), 15},
		{"dst v6", "up", nftest.UDP6("2001:db8:1::1", "2001:db8:5:1::9", 1000, 2000, nil), 15},
		{"src", "up", nftest.UDP4("198.18.6.9", "198.19.1.1", 1000, 2000, nil), 16},
		{"dscp 46", "up", withDSCP(plain, 46), 17},
		{"in_port up2", "up2", plain, 18},
		{"nothing: default", "up", plain, 16},
	}
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up", Default: "src"}, slices...))
			for _, tc := range cases {
				res := r.Run(tc.in, tc.frame)
				if res.Port != tc.want {
					t.Errorf("%s: out of port %d (verdict %d), want %d", tc.name, res.Port, res.Verdict, tc.want)
				}
			}
			// without a default, unmatched frames are dropped and counted
			if err := r.Update(model(h.hook, Settings{Uplink: "up"}, slices...)); err != nil {
				t.Fatal(err)
			}
			if res := r.Run("up", plain); res.Verdict != h.drop || res.Sent() {
				t.Fatalf("unmatched, no default: verdict %d port %d", res.Verdict, res.Port)
			}
			st := viewStatus(t, r)
			if st.PolicyDropPackets != 1 {
				t.Fatalf("policy drops %d, want 1", st.PolicyDropPackets)
			}
			if st.Slices[0].Name != "teid" || st.Slices[0].InPackets != 1 || st.Slices[5].InPackets != 2 {
				t.Fatalf("per-slice counters: %+v", st.Slices)
			}
		})
	}
}

func sctp4() []byte {
	f := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, make([]byte, 8))
	f[23] = 132 // protocol: SCTP (the ports sit where UDP's do)
	nftest.FixIPv4Checksum(f)
	return f
}

func viewStatus(t *testing.T, r *nftest.Rig) *Status {
	t.Helper()
	st, err := status(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Frames back from a slice's chain leave by the slice's entry port, marked
// as the slice's.
func TestReturnTrafficLeavesByEntry(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up"},
				Slice{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{VLAN: intp(10)}}},
				Slice{Name: "b", ID: 2, Port: "s2", Entry: "up2", Rules: []Rule{{InPort: "up2"}}}))
			frame := nftest.UDP4("198.19.1.1", "198.18.1.1", 2000, 1000, nil)
			if res := r.Run("s1", frame); res.Port != 0 {
				t.Fatalf("from s1: port %d, want 0 (uplink)", res.Port)
			}
			if res := r.Run("s2", frame); res.Port != 1 {
				t.Fatalf("from s2: port %d, want 1 (its entry)", res.Port)
			}
			// a slice port that serves no slice is not a way in
			if res := r.Run("s3", frame); res.Sent() {
				t.Fatalf("from s3 (unclassified): sent out of %d", res.Port)
			}
			st := viewStatus(t, r)
			if st.Slices[0].ReturnPackets != 1 || st.Slices[1].ReturnPackets != 1 {
				t.Fatalf("return counters: %+v", st.Slices)
			}
		})
	}
}

// A VLAN slice's chain sees its frames untagged; its return traffic leaves
// tagged again.
func TestVLANSliceIsAVRF(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up"},
				Slice{Name: "v", ID: 1, Port: "s1", Rules: []Rule{{VLAN: intp(10)}}}))
			plain := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, []byte("x"))
			res := r.Run("up", nftest.VLANTagged(plain, 1))
			if res.Port != 11 || !bytes.Equal(res.Data, plain) {
				t.Fatalf("in: port %d, frame\n% x\nwant untagged\n% x", res.Port, res.Data, plain)
			}
			res = r.Run("s1", plain)
			if want := nftest.VLANTagged(plain, 1); res.Port != 0 || (h.hook == datapath.XDP && !bytes.Equal(res.Data, want)) {
				t.Fatalf("return: port %d, frame\n% x\nwant\n% x", res.Port, res.Data, want)
			}
		})
	}
}

// The policers admit exactly their burst back to back, then drop, counting
// each drop on the slice. (The packet policer refills one frame a second,
// the bit policer one 1000-byte frame in 10 s: a slower machine may see one
// refill of the packet policer, and the test allows it only then.)
func TestPolicerAdmitsBurstThenDrops(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up"},
				Slice{Name: "pps", ID: 1, Port: "s1", RatePps: 1, BurstPackets: 3, Rules: []Rule{{DSCP: intp(1)}}},
				Slice{Name: "bps", ID: 2, Port: "s2", RateBps: 800, BurstBytes: 4000, Rules: []Rule{{DSCP: intp(2)}}}))
			base := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, make([]byte, 1000-42))
			var drops [2]uint64
			for i, tc := range []struct {
				dscp     byte
				want     int
				perFrame time.Duration // refill time of one frame
			}{{1, 3, time.Second}, {2, 4, 10 * time.Second}} { // 3 frames; 4000 bytes of 1000-byte frames
				passed := 0
				start := time.Now()
				for i := 0; i < 10; i++ {
					if r.Run("up", withDSCP(base, tc.dscp)).Sent() {
						passed++
					}
				}
				refills := int(time.Since(start) / tc.perFrame)
				if passed < tc.want || passed > tc.want+refills {
					t.Errorf("dscp %d: %d of 10 frames passed the policer, want %d", tc.dscp, passed, tc.want)
				}
				drops[i] = uint64(10 - passed)
			}
			st := viewStatus(t, r)
			if st.Slices[0].PolicePackets != drops[0] || st.Slices[1].PolicePackets != drops[1] || st.Slices[1].PoliceBytes != 1000*drops[1] {
				t.Fatalf("policer drops: %+v, want %v", st.Slices, drops)
			}
		})
	}
}

// With bursts large enough for leases (slicer.bpf.c: sl_police), a CPU
// takes credit from the shared policer several frames at a time, and the
// policers still admit exactly their burst back to back: leases are paid
// for when taken. A slice whose limit changes loses the credit its CPU
// leased under the old one. (Refills: one frame a second, one 1000-byte
// frame in 10 s.)
func TestPolicerLeasesKeepTheBurstExact(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			pps := Slice{Name: "pps", ID: 1, Port: "s1", RatePps: 1, BurstPackets: 40, Rules: []Rule{{DSCP: intp(1)}}}
			bps := Slice{Name: "bps", ID: 2, Port: "s2", RateBps: 800, BurstBytes: 40000, Rules: []Rule{{DSCP: intp(2)}}}
			if _, _, bl, _, _, pl := bps.policer(); bl != 5000 || pl != 0 {
				t.Fatalf("bps leases: %d bytes, %d packets; want 5000 and 0", bl, pl)
			}
			if _, _, bl, _, _, pl := pps.policer(); bl != 0 || pl != 5 {
				t.Fatalf("pps leases: %d bytes, %d packets; want 0 and 5", bl, pl)
			}
			r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up"}, pps, bps))
			base := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, make([]byte, 1000-42))
			send := func(dscp byte, n int) int {
				passed := 0
				for i := 0; i < n; i++ {
					if r.Run("up", withDSCP(base, dscp)).Sent() {
						passed++
					}
				}
				return passed
			}
			// Program.Run runs where the test's thread does: each CPU it
			// left behind may hold up to 4 frames of credit it leased.
			stranded := 4 * (runtime.NumCPU() - 1)
			start := time.Now()
			if passed, refills := send(1, 60), int(time.Since(start)/time.Second); passed < 40-stranded || passed > 40+refills {
				t.Errorf("packet policer: %d of 60 frames passed, want its burst of 40", passed)
			}
			// 32 frames of the bit policer's 40 (on one CPU: 7 leases
			// of 5, credit for 3 more frames left).
			if passed := send(2, 32); passed < min(32, 40-stranded) {
				t.Fatalf("bit policer: %d of 32 frames passed, want all", passed)
			}
			// A new limit: the credit leased under the old one goes; the
			// shared policer, 40 frames ahead, is over the new burst of 20.
			bps.BurstBytes = 20000
			if err := r.Update(model(h.hook, Settings{Uplink: "up"}, pps, bps)); err != nil {
				t.Fatal(err)
			}
			if passed := send(2, 10); passed != 0 {
				t.Errorf("after the change: %d of 10 frames passed on credit leased under the old limit", passed)
			}
		})
	}
}

// At TC with egress interfaces, each slice's frames carry its HTB class in
// skb->priority (both directions), and the interface gets the HTB tree.
func TestTCMarksClassAndOwnsHTB(t *testing.T) {
	lab := netlab.NewT(t)
	a, _, err := lab.RootVeth("eg", "egp")
	if err != nil {
		t.Fatal(err)
	}
	set := Settings{Uplink: "up", Egress: []Egress{{Interface: a, RateBps: 100e6}}}
	r := nftest.New(t, Type, model(datapath.TC, set,
		Slice{Name: "gold", ID: 7, Port: "s1", MinBps: 30e6, Priority: intp(0), Rules: []Rule{{DSCP: intp(46)}}},
		Slice{Name: "bronze", ID: 9, Port: "s2", RateBps: 50e6, Rules: []Rule{{DSCP: intp(0)}}}))
	plain := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, nil)
	if res := r.Run("up", withDSCP(plain, 46)); res.Port != 11 || res.Priority != 0xed000107 {
		t.Fatalf("gold: port %d priority %#x, want 11 and 0xed000107", res.Port, res.Priority)
	}
	if res := r.Run("s2", plain); res.Port != 0 || res.Priority != ClassSlice(9) {
		t.Fatalf("bronze return: port %d priority %#x", res.Port, res.Priority)
	}
	lk, err := netlink.LinkByName(a)
	if err != nil {
		t.Fatal(err)
	}
	classes, err := netlink.ClassList(lk, qdiscHandle)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*netlink.HtbClass{}
	for _, c := range classes {
		if hc, ok := c.(*netlink.HtbClass); ok {
			got[netlink.HandleStr(hc.Handle)] = hc
		}
	}
	gold, bronze := got["ed00:107"], got["ed00:109"]
	if gold == nil || bronze == nil || got["ed00:2"] == nil || got["ed00:8"] == nil {
		t.Fatalf("classes: %v", got)
	}
	if gold.Rate != 30e6/8 || gold.Ceil != 100e6/8 || gold.Prio != 0 {
		t.Errorf("gold class: rate %d ceil %d prio %d (bytes/s)", gold.Rate, gold.Ceil, gold.Prio)
	}
	if bronze.Ceil != 50e6/8 || bronze.Prio != DefaultPriority {
		t.Errorf("bronze class: ceil %d prio %d", bronze.Ceil, bronze.Prio)
	}
	// a deleted slice's class goes; a deleted slicer's tree goes
	if err := r.Update(model(datapath.TC, set, Slice{Name: "gold", ID: 7, Port: "s1", MinBps: 30e6, Rules: []Rule{{DSCP: intp(46)}}})); err != nil {
		t.Fatal(err)
	}
	if cs, _ := classStats(a); cs[0x109].Class != "" {
		t.Fatalf("class of deleted slice bronze still there: %+v", cs)
	}
	r.Ctl.(*controller).Close()
	if ownsRoot(lk, "") {
		t.Fatal("htb tree left on the interface after Close")
	}
}

// EDT (shaping edt, TC): each frame of a rate-limited slice is stamped with
// its departure time, one transmission time at the slice's rate after the
// previous frame's; beyond the 2 s horizon frames are dropped. (Only the
// eBPF side: this kernel has no sch_fq to honour the stamps.) At 80 kbit/s
// a 1000-byte frame takes 100 ms, far longer than a test run.
func TestEDTStampsDepartureTimes(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.TC, Settings{Uplink: "up", Shaping: ShapingEDT},
		Slice{Name: "paced", ID: 1, Port: "s1", RateBps: 8e4, Rules: []Rule{{DSCP: intp(0)}}}))
	frame := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, make([]byte, 1000-42))
	var prev uint64
	for i := 0; i < 12; i++ {
		res := r.Run("up", frame)
		if !res.Sent() || res.Tstamp == 0 {
			t.Fatalf("frame %d: port %d tstamp %d", i, res.Port, res.Tstamp)
		}
		if i > 0 && res.Tstamp-prev != 1e8 {
			t.Fatalf("frame %d leaves %d ns after the previous one, want 100 ms", i, res.Tstamp-prev)
		}
		prev = res.Tstamp
	}
	if st := viewStatus(t, r); st.Slices[0].PolicePackets != 0 || st.Slices[0].EDTPackets != 0 {
		t.Fatalf("drops: %+v", st.Slices[0])
	}
	for i := 0; i < 20; i++ { // 3.2 s of transmission time queued
		r.Run("up", frame)
	}
	if st := viewStatus(t, r); st.Slices[0].EDTPackets == 0 {
		t.Fatal("no frame dropped 2 s of transmission time ahead")
	}
}

func TestBadSlicesRefusedNamingTheField(t *testing.T) {
	ok := Slice{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{Dst: "198.19.0.0/24"}}}
	cases := []struct {
		name  string
		set   Settings
		sl    []Slice
		field string
		msg   string
	}{
		{"bad prefix", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{Dst: "198.19.0.1/24"}}}}, "rules[0].dst", "host bits"},
		{"not a prefix", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{Src: "nope"}}}}, "rules[0].src", "not an IPv4 or IPv6 prefix"},
		{"two kinds in a rule", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{Dst: "198.19.0.0/24", VLAN: intp(3)}}}}, "rules[0]", "one kind"},
		{"teid backwards", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{TEID: "20-10"}}}}, "rules[0].teid", "ends before"},
		{"teid overlap", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{TEID: "10-20"}}}, {Name: "b", ID: 2, Port: "s2", Rules: []Rule{{TEID: "15-30"}}}}, "teid", "overlap"},
		{"same match twice", Settings{Uplink: "up"}, []Slice{ok, {Name: "b", ID: 2, Port: "s2", Rules: []Rule{{Dst: "198.19.0.0/24"}}}}, "rules[0]", "is already slice"},
		{"unknown port", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "nope"}}, "port", "no port"},
		{"shared port", Settings{Uplink: "up"}, []Slice{ok, {Name: "b", ID: 2, Port: "s1"}}, "port", "one slice"},
		{"duplicate id", Settings{Uplink: "up"}, []Slice{ok, {Name: "b", ID: 1, Port: "s2"}}, "id", "also slice"},
		{"id range", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 5000, Port: "s1"}}, "id", "out of range"},
		{"vlan range", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", Rules: []Rule{{VLAN: intp(4095)}}}}, "vlan", "1..4094"},
		{"unknown default", Settings{Uplink: "up", Default: "zz"}, []Slice{ok}, "default", "no slice"},
		{"min over limit", Settings{Uplink: "up", Egress: []Egress{{Interface: "eth-x", RateBps: 100e6}}}, []Slice{{Name: "a", ID: 1, Port: "s1", RateBps: 1e6, MinBps: 2e6}}, "min_bps", "exceeds"},
		{"min without egress", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "s1", MinBps: 2e6}}, "egress", "no interface"},
		{"slice port is the uplink", Settings{Uplink: "up"}, []Slice{{Name: "a", ID: 1, Port: "up"}}, "uplink", "leads into"},
		{"admission", Settings{Uplink: "up", Egress: []Egress{{Interface: "eth-x", RateBps: 100e6}}},
			[]Slice{{Name: "a", ID: 1, Port: "s1", MinBps: 60e6}, {Name: "b", ID: 2, Port: "s2", MinBps: 50e6}}, "rate_bps", "110Mbit/s (a 60Mbit/s, b 50Mbit/s), more than eth-x's 100Mbit/s"},
		{"latency unmeetable", Settings{Uplink: "up", Egress: []Egress{{Interface: "eth-x", RateBps: 100e6}}},
			[]Slice{{Name: "a", ID: 1, Port: "s1", MinBps: 1e6, LatencyMs: 1}}, "latency_ms", "cannot be met"},
		{"edt with a minimum", Settings{Uplink: "up", Shaping: "edt"}, []Slice{{Name: "a", ID: 1, Port: "s1", MinBps: 1e6}}, "shaping", "need htb"},
		{"unknown shaping", Settings{Uplink: "up", Shaping: "fq"}, nil, "shaping", "htb or edt"},
		{"in_port is a slice port", Settings{Uplink: "up"}, []Slice{ok, {Name: "b", ID: 2, Port: "s2", Rules: []Rule{{InPort: "s1"}}}}, "in_port", "leads into"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topo := cube.NewTopology()
			topo.Put(model(datapath.TC, tc.set, tc.sl...))
			err := topo.Validate(nil)
			var fe *cube.FieldError
			if err == nil || !errors.As(err, &fe) {
				t.Fatalf("accepted (err %v)", err)
			}
			if !strings.Contains(fe.Field, tc.field) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q (field %q), want field %q and %q", err, fe.Field, tc.field, tc.msg)
			}
		})
	}
}

func TestTEIDBlocksCoverExactlyTheRange(t *testing.T) {
	for _, r := range [][2]uint32{{0, 0}, {5, 5}, {0x1000, 0x1fff}, {3, 17}, {1, 0xffffffff}, {0, 0xffffffff}} {
		next := uint64(r[0])
		for _, b := range teidBlocks(r[0], r[1]) {
			if uint64(b.Base) != next || b.Len < 0 || b.Len > 32 {
				t.Fatalf("%v: block %+v, want one starting at %d", r, b, next)
			}
			if b.Len < 32 && b.Base&(1<<(32-b.Len)-1) != 0 {
				t.Fatalf("%v: unaligned block %+v", r, b)
			}
			next += 1 << (32 - b.Len)
		}
		if next != uint64(r[1])+1 {
			t.Fatalf("%v: blocks end at %d", r, next-1)
		}
	}
}
