package slicer

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
)

// entryRun feeds frame to prog (an interface's entry program) and returns
// its verdict and the slicer port it left by (-1: none), from the slicer's
// tx counters as datapath.Run finds it.
func entryRun(t *testing.T, r *nftest.Rig, prog *ebpf.Program, frame []byte) (uint32, int) {
	t.Helper()
	before := r.Stats()
	ro := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+512)}
	if r.Model.Hook == datapath.TC {
		ro.Context = make([]byte, 192) // struct __sk_buff
	}
	v, err := prog.Run(ro)
	if err != nil {
		t.Fatal(err)
	}
	after := r.Stats()
	for p := range after {
		if p < datapath.MaxPorts && after[p].TxPackets > before[p].TxPackets {
			return v, p
		}
	}
	return v, -1
}

// A frame entering from the interface meets the slicer's direct entry (the
// program the engine attaches in place of the stub when the interface's
// hop starts with the slicer), not the panel's copy: it classifies as the
// cube does, at both hooks, with every rule kind in use and with IP fields
// only (the untagged IPv4 shortcut of sl_fields): tagged, IPv6, non-IP and
// malformed frames included. Frames that cannot be parsed are dropped and
// counted as such whichever way they were read.
func TestDirectEntryClassifies(t *testing.T) {
	all := []Slice{
		{Name: "teid", ID: 1, Port: "s1", Rules: []Rule{{TEID: "0x1000-0x1fff"}}},
		{Name: "vlan", ID: 3, Port: "s3", Rules: []Rule{{VLAN: intp(10)}}},
		{Name: "l4", ID: 4, Port: "s4", Rules: []Rule{{Proto: "udp", DPort: 5060}}},
		{Name: "dst", ID: 5, Port: "s5", Rules: []Rule{{Dst: "198.19.5.0/24"}, {Dst: "2001:db8:5::/48"}}},
		{Name: "src", ID: 6, Port: "s6", Rules: []Rule{{Src: "198.18.6.0/24"}}},
		{Name: "dscp", ID: 7, Port: "s7", Rules: []Rule{{DSCP: intp(46)}}},
	}
	ipOnly := []Slice{all[1], all[3], all[4], all[5]}
	plain := nftest.UDP4("198.18.1.1", "198.19.1.1", 1000, 2000, nil)
	short := append([]byte(nil), nftest.UDP4("198.18.1.1", "198.19.5.1", 1000, 2000, nil)...)
	nftest.SetIPv4TotLen(short, len(short)) // claims more than the frame holds
	noIHL := append([]byte(nil), nftest.UDP4("198.18.1.1", "198.19.5.1", 1000, 2000, nil)...)
	noIHL[14] = 0x44 // IHL 4: not an IPv4 header
	arp := nftest.ARPRequest("02:00:00:00:00:01", "198.18.1.1", "198.18.1.2")
	cases := []struct {
		name  string
		frame []byte
		want  int // port index; -1: dropped
		parse bool
	}{
		{"dst v4", nftest.UDP4("198.18.1.1", "198.19.5.77", 1000, 2000, nil), 15, false},
		{"dst v4 tagged 20", vlanTagged(nftest.UDP4("198.18.1.1", "198.19.5.77", 1000, 2000, nil), 20), 15, false},
		{"vlan 10 before dst", vlanTagged(nftest.UDP4("198.18.1.1", "198.19.5.77", 1000, 2000, nil), 10), 13, false},
		{"dst v6", nftest.UDP6("2001:db8:1::1", "2001:db8:5:1::9", 1000, 2000, nil), 15, false},
		{"src", nftest.UDP4("198.18.6.9", "198.19.1.1", 1000, 2000, nil), 16, false},
		{"dscp 46", withDSCP(plain, 46), 17, false},
		{"nothing: default", plain, 16, false},
		{"not IP: default", arp, 16, false},
		{"shorter than its IPv4 length", short, -1, true},
		{"IPv4 header of 16 bytes", noIHL, -1, true},
	}
	for _, h := range hooks {
		for _, set := range []struct {
			name   string
			slices []Slice
		}{{"every kind", all}, {"IP fields only", ipOnly}} {
			t.Run(string(h.hook)+"/"+set.name, func(t *testing.T) {
				r := nftest.New(t, Type, model(h.hook, Settings{Uplink: "up", Default: "src"}, set.slices...))
				entry := r.Entry("up")
				parseDrops := uint64(0)
				for _, tc := range cases {
					v, port := entryRun(t, r, entry, tc.frame)
					if port != tc.want || (tc.want < 0 && v != h.drop) {
						t.Errorf("%s: verdict %d, out of port %d, want %d", tc.name, v, port, tc.want)
					}
					if res := r.Run("up", tc.frame); res.Port != port {
						t.Errorf("%s: the entry sent it out of port %d, the cube out of %d", tc.name, port, res.Port)
					}
					if tc.parse {
						parseDrops += 2 // the entry's and the cube's
					}
				}
				if st := viewStatus(t, r); st.ParseDropPackets != parseDrops {
					t.Errorf("parse drops %d, want %d", st.ParseDropPackets, parseDrops)
				}
			})
		}
	}
}

// vlanTagged is frame with an 802.1Q tag of VLAN vid.
func vlanTagged(frame []byte, vid uint16) []byte {
	f := nftest.VLANTagged(frame, 1)
	f[14], f[15] = byte(vid>>8)&0x0f, byte(vid)
	return f
}

// BenchmarkInFront reports what a frame from the interface costs (ns, with
// BPF_PROG_TEST_RUN Repeat) through a one-cube chain (a portfwd entered
// directly) and through a slicer in front of it (the slicer's direct
// entry: one slice, a destination rule, a rate limit far above the load),
// as the slicer-xdp and slicer-tc benchmark groups build them.
func BenchmarkInFront(b *testing.B) {
	frame := nftest.UDP4("198.18.0.1", "198.19.0.1", 1000, 2000, make([]byte, 18))
	for _, h := range hooks {
		for _, slicer := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/slicer=%v", h.hook, slicer), func(b *testing.B) {
				rate := uint64(100e9)
				r := nftest.New(b, Type, model(h.hook, Settings{Uplink: "up"},
					Slice{Name: "s1", ID: 1, Port: "s1", RateBps: rate, Rules: []Rule{{Dst: "198.19.0.0/26"}}}))
				pf := &cube.Cube{Name: "pf", Type: "portfwd", Hook: h.hook,
					Ports: []cube.Port{{Name: "in", Index: 0}, {Name: "out", Index: 1}},
					Tables: map[string]map[string]json.RawMessage{"rules": {
						"in": json.RawMessage(`{"in_port":"in","out_port":"out"}`)}}}
				dc, err := r.Add(portfwd.Type, pf, 2)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Prog.SetHop(11, datapath.Hop{Kind: datapath.DstCube, Slot: 2, Port: 0}); err != nil {
					b.Fatal(err)
				}
				var entry *ebpf.Program
				if slicer {
					entry = r.Entry("up")
				} else if entry, err = r.DP.Entry(h.hook, datapath.Hop{Kind: datapath.DstCube, Slot: 2, Port: 0}, dc); err != nil {
					b.Fatal(err)
				} else {
					defer entry.Close()
				}
				if v, _, err := entry.Benchmark(frame, 1, nil); err != nil || v != h.sent {
					b.Fatalf("verdict %d (%v), want %d", v, err, h.sent)
				}
				b.ResetTimer()
				_, per, err := entry.Benchmark(frame, b.N, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(per.Nanoseconds()), "ns/pkt")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
