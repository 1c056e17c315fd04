package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	pcap "github.com/edgenf/edgenf/internal/capture"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"golang.org/x/net/bpf"
)

func corpus() [][]byte {
	udp := nftest.UDP4("198.18.0.1", "198.18.1.2", 1000, 53, []byte("query"))
	frags := nftest.Fragments4(nftest.UDP4("198.18.0.1", "198.18.1.2", 1000, 53, make([]byte, 64)), 7, 32)
	return [][]byte{
		udp,
		nftest.UDP4("198.18.0.3", "198.18.0.4", 53, 4000, nil),
		nftest.TCP4("198.18.0.1", "198.18.1.2", 40000, 80),
		nftest.TCP4("198.18.2.9", "198.18.0.1", 443, 40001),
		nftest.ICMP4Echo("198.18.0.1", "198.18.0.2", 7, 1),
		nftest.UDP6("2001:db8::1", "2001:db8::2", 5353, 53, []byte("v6")),
		nftest.ARPRequest("02:00:00:00:00:01", "198.18.0.1", "198.18.0.2"),
		nftest.VLANTagged(udp, 1),
		nftest.VLANTagged(nftest.TCP4("198.18.0.5", "198.18.0.6", 1, 22), 2),
		frags[1], // a later fragment: no ports
		udp[:20], // truncated (XDP; TC test runs need a whole header)
	}
}

var filters = []string{
	"", "udp", "tcp", "icmp", "arp", "ip6", "port 53", "udp port 53", "tcp dst port 80", "src port 443",
	"host 198.18.0.1", "src host 198.18.0.1", "dst net 198.18.1.0/24", "net 198.18.0.0/16 and not port 53",
	"vlan", "vlan 10", "vlan 10 and udp port 53", "vlan and vlan 11", "not vlan and (tcp or icmp)",
	"ip6 and udp dst port 53", "portrange 50-60", "less 70", "greater 100", "tcp[tcpflags] & tcp-syn != 0",
	"ether src 02:00:00:00:00:01", "ip proto 17", "ip[8] = 64 or ip6",
}

// The in-kernel interpreter takes exactly the frames that a classic BPF
// machine (golang.org/x/net/bpf's, standing in for the kernel's socket
// filter) takes with libpcap's program, for a corpus of frames and tcpdump
// expressions; what it copies is the frame, cut to the snap length.
func TestFilterMatchesClassicBPF(t *testing.T) {
	if _, err := pcap.Compile(context.Background(), "udp"); err != nil {
		t.Skip(err)
	}
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			r := nftest.New(t, Type, &cube.Cube{Name: "cap", Hook: hook})
			rd, err := Open(r.Handle())
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			frames := corpus()
			for _, expr := range filters {
				cfg, _ := json.Marshal(Config{Filter: expr, Snaplen: 48, Rate: -1})
				if err := r.Update(&cube.Cube{Name: "cap", Type: "capture", Hook: hook, Config: cfg}); err != nil {
					t.Fatalf("%q: %v", expr, err)
				}
				var vm *bpf.VM
				if expr != "" {
					prog, _ := pcap.Compile(context.Background(), expr)
					insns := make([]bpf.Instruction, len(prog))
					for i, ri := range prog {
						insns[i] = ri.Disassemble()
					}
					if vm, err = bpf.NewVM(insns); err != nil {
						t.Fatalf("%q: %v", expr, err)
					}
				}
				for i, f := range frames {
					if hook == datapath.TC && len(f) < 34 {
						continue // BPF_PROG_TEST_RUN wants an skb with an IP header's room
					}
					want := true
					if vm != nil {
						n, err := vm.Run(f)
						if err != nil {
							t.Fatal(err)
						}
						want = n > 0
					}
					before, _ := rd.Stats()
					res := r.RunTransparent(datapath.Direction(i%2), f)
					if !bytes.Equal(res.Data, f) {
						t.Fatalf("frame %d changed", i)
					}
					after, _ := rd.Stats()
					got := after.Captured > before.Captured
					var p pcap.Packet
					if got {
						if _, p, err = rd.Next(time.Now().Add(time.Second)); err != nil {
							t.Fatal(err)
						}
					}
					if got != want {
						t.Errorf("%q, frame %d: captured %v, classic BPF says %v", expr, i, got, want)
						continue
					}
					if got && (p.Len != len(f) || p.Dir != i%2 || !bytes.Equal(p.Data, f[:min(len(f), 48)])) {
						t.Errorf("%q, frame %d: record len %d dir %d data %x", expr, i, p.Len, p.Dir, p.Data)
					}
				}
			}
		})
	}
}

// Directions not asked for and frames over the rate pass uncopied, and
// are counted.
func TestDirectionAndRate(t *testing.T) {
	r := nftest.New(t, Type, &cube.Cube{Name: "cap", Hook: datapath.XDP, Config: json.RawMessage(`{"direction":"in","rate":1}`)})
	rd, err := Open(r.Handle())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	f := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, nil)
	for range 3 {
		r.RunTransparent(datapath.Egress, f)
	}
	for range 5 {
		r.RunTransparent(datapath.Ingress, f)
	}
	s, err := rd.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// burst max(1/10,1) = 1 frame; the bucket starts full enough for one
	// (its first refill counts from boot), then 1 per second per CPU
	if s.Seen != 5 || s.Matched != 5 || s.Captured < 1 || s.Captured+s.RateDrop != 5 || s.RateDrop < 3 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		msg string
	}{
		{Config{Snaplen: MaxSnaplen + 1}, "snap length"},
		{Config{Direction: "sideways"}, "direction"},
		{Config{Rate: -5}, "rate"},
		{Config{Filter: "udp prot 53"}, "syntax error"},
	} {
		err := c.cfg.Validate(nil)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.msg)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.msg)
		}
	}
}

// The cost model's cases hold the ring as they say for every measured
// run: drained, a run of Repeat frames all written (none lost) and read
// out by the next run's Before; filled, every frame lost, none written.
func TestCostCasesHoldTheRing(t *testing.T) {
	f := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, nil)
	stats := func(r *nftest.Rig) pcap.Stats {
		t.Helper()
		st, err := r.Handle().Map("cap_stats")
		if err != nil {
			t.Fatal(err)
		}
		s, err := readStats(st)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	newRig := func() *nftest.Rig {
		return nftest.New(t, Type, &cube.Cube{Name: "cap", Hook: datapath.XDP, Config: json.RawMessage(`{"rate":-1}`)})
	}
	runN := func(r *nftest.Rig) func(int) error {
		return func(n int) error {
			entry, err := r.Rig.TransparentEntry(datapath.Ingress)
			if err != nil {
				return err
			}
			defer entry.Close()
			_, err = entry.Run(&ebpf.RunOptions{Data: f, Repeat: uint32(n)})
			return err
		}
	}

	r := newRig()
	steady, repeat := drained(len(f))
	before, stop, err := steady(r.Handle(), runN(r))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if repeat < 100 || repeat*recordBytes(len(f)) >= wakeBytes {
		t.Fatalf("a drained run of %d %d-byte records: it must stay under the %d bytes that wake the reader", repeat, recordBytes(len(f)), wakeBytes)
	}
	for round := range 3 {
		if err := before(); err != nil {
			t.Fatal(err)
		}
		if err := runN(r)(repeat); err != nil {
			t.Fatal(err)
		}
		if s := stats(r); s.Captured != uint64((round+1)*repeat) || s.RingDrop != 0 {
			t.Fatalf("drained, round %d: %+v", round, s)
		}
	}

	r = newRig()
	if _, _, err := filled(len(f))(r.Handle(), runN(r)); err != nil {
		t.Fatal(err)
	}
	s0 := stats(r)
	if err := runN(r)(100); err != nil {
		t.Fatal(err)
	}
	if s := stats(r); s.Captured != s0.Captured || s.RingDrop != s0.RingDrop+100 {
		t.Fatalf("filled: before %+v, after 100 frames %+v", s0, s)
	}
}
