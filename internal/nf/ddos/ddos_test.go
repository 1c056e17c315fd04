package ddos

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/perf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/google/gopacket/layers"
)

type hookCase struct {
	hook       datapath.Hook
	pass, drop uint32
}

var hooks = []hookCase{
	{datapath.XDP, datapath.XDPRedirect, datapath.XDPDrop},
	{datapath.TC, datapath.TCActRedirect, datapath.TCActShot},
}

func model(hook datapath.Hook, cfg *Config, src, dst []Entry) *cube.Cube {
	c := &cube.Cube{Name: "dd", Type: "ddos", Hook: hook, Tables: map[string]map[string]json.RawMessage{}}
	if cfg != nil {
		c.Config = nftest.Entry(cfg)
	}
	for name, list := range map[string][]Entry{"blacklist_src": src, "blacklist_dst": dst} {
		if len(list) == 0 {
			continue
		}
		rows := map[string]json.RawMessage{}
		for _, e := range list {
			e := e
			if err := e.Validate(nil); err != nil {
				panic(err)
			}
			rows[e.Prefix] = nftest.Entry(e)
		}
		c.Tables[name] = rows
	}
	return c
}

// tcp4 builds a TCP segment with the given flags ("S", "SA", "A").
func tcp4(src, dst string, sport, dport uint16, flags string) []byte {
	eth := &layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:00:01"), DstMAC: nftest.MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Window: 1024,
		SYN: strings.Contains(flags, "S"), ACK: strings.Contains(flags, "A")}
	return nftest.Serialize(eth, ip, tcp)
}

func countersOf(t *testing.T, r *nftest.Rig) map[string]uint64 {
	t.Helper()
	c, err := Counters(r.Handle())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBlacklistKinds(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, nil,
				[]Entry{{Prefix: "198.18.0.7"}, {Prefix: "198.18.64.0/18"}, {Prefix: "2001:db8:bad::/48"}},
				[]Entry{{Prefix: "198.19.0.9/32"}, {Prefix: "198.19.128.0/17"}, {Prefix: "2001:db8:dead::1"}}))
			cases := []struct {
				name  string
				frame []byte
				drop  bool
			}{
				{"src exact", nftest.UDP4("198.18.0.7", "198.19.0.1", 1, 2, []byte("x")), true},
				{"src exact neighbour", nftest.UDP4("198.18.0.8", "198.19.0.1", 1, 2, nil), false},
				{"src prefix", nftest.TCP4("198.18.100.1", "198.19.0.1", 1, 2), true},
				{"src prefix edge", nftest.TCP4("198.18.127.255", "198.19.0.1", 1, 2), true},
				{"src outside prefix", nftest.TCP4("198.18.128.0", "198.19.0.1", 1, 2), false},
				{"src v6 prefix", nftest.UDP6("2001:db8:bad:1::5", "2001:db8::1", 1, 2, nil), true},
				{"dst exact", nftest.UDP4("198.18.1.1", "198.19.0.9", 1, 2, nil), true},
				{"dst prefix", nftest.ICMP4Echo("198.18.1.1", "198.19.200.1", 1, 1), true},
				{"dst outside", nftest.ICMP4Echo("198.18.1.1", "198.19.127.1", 1, 1), false},
				{"dst v6 exact", nftest.UDP6("2001:db8::1", "2001:db8:dead::1", 1, 2, nil), true},
				{"v6 pass", nftest.UDP6("2001:db8::1", "2001:db8:dead::2", 1, 2, nil), false},
				{"arp pass", nftest.ARPRequest("02:00:00:00:00:01", "198.18.0.7", "198.18.0.1"), false},
			}
			for _, c := range cases {
				for _, dir := range []datapath.Direction{datapath.Ingress, datapath.Egress} {
					res := r.RunTransparent(dir, c.frame)
					want := h.pass
					if c.drop {
						want = h.drop
					}
					if res.Verdict != want {
						t.Errorf("%s (%s): verdict %d, want %d", c.name, dir, res.Verdict, want)
					}
					if !c.drop && !bytes.Equal(res.Data, c.frame) {
						t.Errorf("%s: frame changed", c.name)
					}
				}
			}
			got := countersOf(t, r)
			// ARP passes without being counted as inspected IP traffic.
			if got["dropped_src_blacklist"] != 8 || got["dropped_dst_blacklist"] != 6 || got["passed"] != 8 {
				t.Errorf("counters %v", got)
			}
			hits, err := listHits(r.Handle(), r.Model)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]Hit{
				"198.18.0.7/32":        {Packets: 2, Bytes: 2 * uint64(len(cases[0].frame))},
				"198.18.64.0/18":       {Packets: 4, Bytes: 2 * uint64(len(cases[2].frame)+len(cases[3].frame))},
				"2001:db8:bad::/48":    {Packets: 2, Bytes: 2 * uint64(len(cases[5].frame))},
				"198.19.0.9/32":        {Packets: 2, Bytes: 2 * uint64(len(cases[6].frame))},
				"198.19.128.0/17":      {Packets: 2, Bytes: 2 * uint64(len(cases[7].frame))},
				"2001:db8:dead::1/128": {Packets: 2, Bytes: 2 * uint64(len(cases[9].frame))},
			}
			hl := hits.([]Hit)
			if len(hl) != len(want) {
				t.Fatalf("hits %+v", hl)
			}
			for _, x := range hl {
				w := want[x.Prefix]
				if x.Packets != w.Packets || x.Bytes != w.Bytes || !x.Active {
					t.Errorf("hit %+v, want %+v", x, w)
				}
			}
			// Framework counters: drops per direction.
			st := r.Stats()
			if st[0].DropPackets != 7 || st[1].DropPackets != 7 || st[0].RxPackets != 5 {
				t.Errorf("framework drops: %+v %+v", st[0], st[1])
			}
		})
	}
}

func TestSyncKeepsCountersAndRemovesEntries(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.7"}, {Prefix: "198.18.9.0/24"}}, nil))
	f := nftest.UDP4("198.18.0.7", "198.19.0.1", 1, 2, nil)
	g := nftest.UDP4("198.18.9.9", "198.19.0.1", 1, 2, nil)
	r.RunTransparent(datapath.Ingress, f)
	r.RunTransparent(datapath.Ingress, g)
	// Add an entry, keep the others: counters survive.
	if err := r.Update(model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.7"}, {Prefix: "198.18.9.0/24"}, {Prefix: "198.18.0.8"}}, nil)); err != nil {
		t.Fatal(err)
	}
	r.RunTransparent(datapath.Ingress, f)
	hits, _ := listHits(r.Handle(), r.Model)
	for _, x := range hits.([]Hit) {
		if x.Prefix == "198.18.0.7/32" && x.Packets != 2 {
			t.Errorf("counter lost across sync: %+v", x)
		}
	}
	// Single-entry writes (what the engine does for table-only changes):
	// replacing an entry keeps its counter, a new one drops, delete frees.
	ew := r.Ctl.(cube.EntryWriter)
	soon := time.Now().Add(time.Hour)
	if err := ew.PutEntry(r.Handle(), r.Model, "blacklist_src", &Entry{Prefix: "198.18.0.7/32", Expires: &soon}); err != nil {
		t.Fatal(err)
	}
	if err := ew.PutEntry(r.Handle(), r.Model, "blacklist_dst", &Entry{Prefix: "198.19.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.1.1", "198.19.3.3", 1, 2, nil)).Verdict; v != datapath.XDPDrop {
		t.Errorf("entry put alone does not drop: %d", v)
	}
	if err := ew.DeleteEntry(r.Handle(), r.Model, "blacklist_dst", &Entry{Prefix: "198.19.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.1.1", "198.19.3.3", 1, 2, nil)).Verdict; v != datapath.XDPRedirect {
		t.Errorf("deleted entry still drops: %d", v)
	}
	ev, err := entryOf(t, r, "blacklist_src", "198.18.0.7")
	if err != nil || ev.Packets != 2 || ev.Expires == 0 {
		t.Errorf("replaced entry: %+v %v (want 2 packets kept, an expiry)", ev, err)
	}
	// Remove both: traffic passes, maps are empty.
	if err := r.Update(model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.8"}}, nil)); err != nil {
		t.Fatal(err)
	}
	for _, fr := range [][]byte{f, g} {
		if v := r.RunTransparent(datapath.Ingress, fr).Verdict; v != datapath.XDPRedirect {
			t.Errorf("removed entry still drops: %d", v)
		}
	}
	m, _ := r.Prog.Map("dd_src_lpm")
	var k lpmKey
	var v entryVal
	if m.Iterate().Next(&k, &v) {
		t.Errorf("LPM map still holds %+v", k)
	}
	if _, err := entryOf(t, r, "blacklist_src", "198.18.0.7"); err == nil {
		t.Error("198.18.0.7 still in the maps")
	}
	if _, err := entryOf(t, r, "blacklist_src", "198.18.0.8"); err != nil {
		t.Errorf("198.18.0.8: %v", err)
	}
}

// entryOf reads the fast-path entry of a blacklist entry, wherever it is
// (an IPv4 table or fallback trie, the hash of exact addresses, a trie).
func entryOf(t *testing.T, r *nftest.Rig, table, prefix string) (entryVal, error) {
	t.Helper()
	p, err := ParsePrefix(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return r.Ctl.(*controller).entry(r.Handle(), sideOf(table), p)
}

func TestBlacklistExpiry(t *testing.T) {
	past := time.Now().Add(-time.Hour)
	src := []Entry{{Prefix: "198.18.0.1", Expires: &past}, {Prefix: "198.18.3.0/24", TTLSeconds: 3600}}
	r := nftest.New(t, Type, model(datapath.XDP, nil, src, nil))
	run := func(src string) uint32 {
		return r.RunTransparent(datapath.Ingress, nftest.UDP4(src, "198.19.0.1", 1, 2, nil)).Verdict
	}
	if v := run("198.18.0.1"); v != datapath.XDPRedirect {
		t.Errorf("expired entry drops (%d)", v)
	}
	if v := run("198.18.3.3"); v != datapath.XDPDrop {
		t.Errorf("ttl entry passes (%d)", v)
	}
	// An entry that expires soon, counted from now (the rig is up): a run
	// shows that it drops before its deadline only if the run ended before
	// the deadline. A machine that stalled longer than that proves
	// nothing, so the entry gets twice the time and the run is made again.
	var soon time.Time
	for life := time.Second; ; life *= 2 {
		soon = time.Now().Add(life)
		if err := r.Update(model(datapath.XDP, nil, append(src, Entry{Prefix: "198.18.0.2", Expires: &soon}), nil)); err != nil {
			t.Fatal(err)
		}
		v := run("198.18.0.2")
		if time.Now().Before(soon) {
			if v != datapath.XDPDrop {
				t.Errorf("live entry passes (%d)", v)
			}
			break
		}
		if life > time.Minute {
			t.Fatalf("no run ended within %v of setting the entry", life)
		}
	}
	time.Sleep(time.Until(soon) + 50*time.Millisecond)
	if v := run("198.18.0.2"); v != datapath.XDPRedirect {
		t.Errorf("entry still drops after its deadline (%d)", v)
	}
	// The ticker removes expired entries from the map.
	r.Ctl.(*controller).Tick(r.Handle(), r.Model, time.Now())
	for _, a := range []string{"198.18.0.1", "198.18.0.2"} {
		if _, err := entryOf(t, r, "blacklist_src", a); err == nil {
			t.Errorf("%s still in the map after Tick", a)
		}
	}
	if _, err := entryOf(t, r, "blacklist_src", "198.18.3.0/24"); err != nil {
		t.Error("ttl entry removed too early")
	}
}

// puntReader collects the events the fast path emits.
func puntReader(t *testing.T, r *nftest.Rig) func() []cube.Punt {
	rd, err := perf.NewReader(r.DP.PuntMap(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return func() []cube.Punt {
		var out []cube.Punt
		for {
			rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
			rec, err := rd.Read()
			if err != nil {
				return out
			}
			var hdr datapath.PuntHeader
			if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr); err != nil || hdr.Magic != datapath.PuntMagic {
				continue
			}
			if hdr.Cube != 1 { // the rig's slot: events name the transparent cube itself
				t.Errorf("event names slot %d", hdr.Cube)
			}
			n := binary.Size(hdr)
			frame := rec.RawSample[n:]
			if l := int(min(hdr.PktLen, 256)); len(frame) > l {
				frame = frame[:l]
			}
			out = append(out, cube.Punt{InPort: int(hdr.InPort), Reason: hdr.Reason, Arg: hdr.Arg, PktLen: int(hdr.PktLen), Frame: frame})
		}
	}
}

func TestPortScanDistinctPorts(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, &Config{Scan: &ScanConfig{DistinctPorts: 20, BlockSeconds: 60}}, nil, nil))
			events := puntReader(t, r)
			scanner, client := "198.18.0.66", "198.18.0.10"
			// The client opens many connections to one port, and sends
			// ACKs to many ports: no probes of distinct ports.
			for i := 0; i < 50; i++ {
				if v := r.RunTransparent(datapath.Ingress, tcp4(client, "198.19.0.1", uint16(30000+i), 443, "S")).Verdict; v != h.pass {
					t.Fatalf("client SYN %d: verdict %d", i, v)
				}
				if v := r.RunTransparent(datapath.Ingress, tcp4(client, "198.19.0.1", 443, uint16(1000+i*7), "A")).Verdict; v != h.pass {
					t.Fatalf("client ACK %d: verdict %d", i, v)
				}
			}
			// The scanner probes scattered ports: 20 pass, the 21st blocks.
			ports := []uint16{}
			for i := 0; i < 30; i++ {
				ports = append(ports, uint16(7+i*997%60000))
			}
			for i, p := range ports {
				v := r.RunTransparent(datapath.Ingress, tcp4(scanner, "198.19.0.1", 40000, p, "S")).Verdict
				want := h.pass
				if i >= 20 {
					want = h.drop
				}
				if v != want {
					t.Fatalf("probe %d (port %d): verdict %d, want %d", i, p, v, want)
				}
			}
			// Blocked for everything now, even non-probes; others pass.
			if v := r.RunTransparent(datapath.Ingress, nftest.UDP4(scanner, "198.19.0.1", 1, 53, nil)).Verdict; v != h.drop {
				t.Errorf("blocked scanner's UDP passes")
			}
			if v := r.RunTransparent(datapath.Ingress, tcp4(client, "198.19.0.1", 30001, 443, "S")).Verdict; v != h.pass {
				t.Errorf("client blocked")
			}
			c := countersOf(t, r)
			if c["blocked_scan"] != 1 || c["events"] != 1 || c["dropped_blocked"] != 11 || c["mirrored"] != 0 {
				t.Errorf("counters %v", c)
			}
			bl, err := listBlocked(r.Handle(), r.Model)
			if err != nil {
				t.Fatal(err)
			}
			b := bl.([]Blocked)
			if len(b) != 1 || b[0].Source != scanner || b[0].Reason != "port-scan" || b[0].Count != 21 || b[0].Packets != 11 ||
				b[0].Until.Sub(b[0].Since) != 60*time.Second {
				t.Fatalf("blocked %+v", b)
			}
			ev := events()
			if len(ev) != 1 || ev[0].Reason != ReasonScan || ev[0].Arg != 21 {
				t.Fatalf("events %+v", ev)
			}
			r.Ctl.(cube.PuntHandler).HandlePunt(r.Handle(), r.Model, ev[0])
			got := r.Ctl.(*controller).Events()
			if len(got) != 1 || got[0].Source != scanner || got[0].Reason != "port-scan" || got[0].Count != 21 ||
				!strings.Contains(got[0].Packet, "TCP 198.18.0.66:40000 → 198.19.0.1:") || got[0].BlockedUntil.IsZero() {
				t.Fatalf("event %+v", got)
			}
			// unblock releases it and tracking restarts.
			if _, err := unblock(r.Handle(), r.Model, &UnblockArgs{Source: scanner}); err != nil {
				t.Fatal(err)
			}
			if v := r.RunTransparent(datapath.Ingress, tcp4(scanner, "198.19.0.1", 40000, 80, "S")).Verdict; v != h.pass {
				t.Errorf("unblocked source still dropped")
			}
			if _, err := unblock(r.Handle(), r.Model, &UnblockArgs{Source: scanner}); err == nil {
				t.Error("unblocking a source that is not blocked succeeds")
			}
		})
	}
}

func TestPortScanSequential(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, &Config{Scan: &ScanConfig{SequentialPorts: 8}}, nil, nil))
	// Repeats and a broken run do not count: 1000..1006 (7), restart.
	seq := []uint16{1000, 1001, 1001, 1002, 1003, 1004, 1005, 1006, 2000, 2001, 2002, 2003, 2004, 2005, 2006}
	for i, p := range seq {
		if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.0.5", "198.19.0.1", 5000, p, nil)).Verdict; v != datapath.XDPRedirect {
			t.Fatalf("probe %d port %d blocked too early", i, p)
		}
	}
	// 2007 completes a run of 8.
	if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.0.5", "198.19.0.1", 5000, 2007, nil)).Verdict; v != datapath.XDPDrop {
		t.Fatalf("run of 8 not blocked: %d", v)
	}
	// Default block time.
	bl, _ := listBlocked(r.Handle(), r.Model)
	if b := bl.([]Blocked); len(b) != 1 || b[0].Until.Sub(b[0].Since) != 300*time.Second {
		t.Fatalf("blocked %+v", b)
	}
}

func TestPortScanWindow(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, &Config{Scan: &ScanConfig{DistinctPorts: 5, WindowMs: 1000}}, nil, nil))
	send := func(p uint16) uint32 {
		return r.RunTransparent(datapath.Ingress, tcp4("198.18.0.5", "198.19.0.1", 5000, p, "S")).Verdict
	}
	for p := uint16(1); p <= 5; p++ {
		send(p * 100)
	}
	time.Sleep(1100 * time.Millisecond)
	// A new window: 5 more distinct ports are fine, the 6th is not.
	for p := uint16(6); p <= 10; p++ {
		if v := send(p * 100); v != datapath.XDPRedirect {
			t.Fatalf("port %d blocked across windows", p*100)
		}
	}
	if v := send(1100); v != datapath.XDPDrop {
		t.Fatal("6th distinct port in a window not blocked")
	}
}

func TestRateBlocking(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, &Config{Rate: &RateConfig{Threshold: 10, WindowMs: 60000, BlockSeconds: 5}, Directions: "ingress"}, nil, nil))
			events := puntReader(t, r)
			f := nftest.UDP4("198.18.0.9", "198.19.0.1", 1, 53, []byte("q"))
			for i := 0; i < 10; i++ {
				if v := r.RunTransparent(datapath.Ingress, f).Verdict; v != h.pass {
					t.Fatalf("packet %d dropped", i)
				}
			}
			// Egress is not inspected.
			for i := 0; i < 20; i++ {
				if v := r.RunTransparent(datapath.Egress, f).Verdict; v != h.pass {
					t.Fatalf("egress packet %d dropped", i)
				}
			}
			for i := 0; i < 5; i++ {
				if v := r.RunTransparent(datapath.Ingress, f).Verdict; v != h.drop {
					t.Fatalf("packet %d over the threshold passes", 10+i)
				}
			}
			c := countersOf(t, r)
			if c["blocked_rate"] != 1 || c["dropped_blocked"] != 5 || c["passed"] != 30 {
				t.Errorf("counters %v", c)
			}
			if ev := events(); len(ev) != 1 || ev[0].Reason != ReasonRate || ev[0].Arg != 11 {
				t.Errorf("events %+v", ev)
			}
		})
	}
}

func TestScannerMirrored(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, &Config{Scan: &ScanConfig{DistinctPorts: 3}, Rate: &RateConfig{Threshold: 10}, MirrorInterface: "lo"}, nil, nil))
			// A scanner: its packets leave by the mirror (a redirect, not a drop).
			for p := uint16(1); p <= 6; p++ {
				f := nftest.UDP4("198.18.0.5", "198.19.0.1", 5000, p, nil)
				res := r.RunTransparent(datapath.Ingress, f)
				if res.Verdict != h.pass || !bytes.Equal(res.Data, f) {
					t.Fatalf("probe %d: verdict %d", p, res.Verdict)
				}
			}
			// A rate offender is dropped, not mirrored.
			for i := 0; i < 15; i++ {
				res := r.RunTransparent(datapath.Ingress, nftest.ICMP4Echo("198.18.0.6", "198.19.0.1", 1, uint16(i)))
				if (res.Verdict == h.drop) != (i >= 10) {
					t.Fatalf("ping %d: verdict %d", i, res.Verdict)
				}
			}
			c := countersOf(t, r)
			if c["mirrored"] != 3 || c["dropped_blocked"] != 8 || c["blocked_scan"] != 1 || c["blocked_rate"] != 1 {
				t.Errorf("counters %v", c)
			}
		})
	}
}

func TestMillionEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	// The maps are filled directly; the model's IPv6 entries make the
	// fast path look them up.
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.1"}, {Prefix: "2001:db8:ffff::7"}, {Prefix: "2001:db8::/64"}}, nil))
	exact, _ := r.Prog.Map("dd_src_exact")
	lpm, _ := r.Prog.Map("dd_src_lpm")
	const n = MaxEntries - 1
	keys := make([]addrKey, n)
	vals := make([]entryVal, n)
	for i := range keys {
		// 2001:db8:1::/48 hosts
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1}
		binary.BigEndian.PutUint32(a[12:], uint32(i))
		keys[i] = a
	}
	start := time.Now()
	if err := bpfmap.Put(exact, keys, vals); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d exact entries in %v", n+1, time.Since(start))
	start = time.Now()
	for i := 0; i < n; i++ {
		// 198.18.0.0/15 has 512 /24s; use 2001:db8:2::/48 /112s for a million prefixes.
		a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 2}
		binary.BigEndian.PutUint32(a[10:], uint32(i))
		if err := lpm.Put(lpmKey{Prefixlen: 112, Addr: a}, entryVal{}); err != nil {
			t.Fatalf("lpm entry %d: %v", i, err)
		}
	}
	t.Logf("%d prefix entries in %v", n+1, time.Since(start))
	for _, c := range []struct {
		src  string
		drop bool
	}{
		{"2001:db8:1::f:423e", true},    // exact #999998
		{"2001:db8:1::10:0", false},     // beyond
		{"2001:db8:2::f:423e:77", true}, // prefix #999998
		{"2001:db8:3::1", false},
		{"2001:db8::5", true},
	} {
		v := r.RunTransparent(datapath.Ingress, nftest.UDP6(c.src, "2001:db8:ffff::1", 1, 2, nil)).Verdict
		if (v == datapath.XDPDrop) != c.drop {
			t.Errorf("%s: verdict %d, want drop=%v", c.src, v, c.drop)
		}
	}
	if err := exact.Put(addrKey{1}, entryVal{}); err == nil {
		t.Log("map accepts more than MaxEntries (fine)")
	}
}

func TestValidationErrors(t *testing.T) {
	bad := []struct {
		table string
		entry string
		want  string
	}{
		{"blacklist_src", `{"prefix":"300.1.1.1"}`, `prefix: invalid address "300.1.1.1"`},
		{"blacklist_src", `{"prefix":"198.18.0.1/33"}`, `prefix: invalid prefix "198.18.0.1/33"`},
		{"blacklist_dst", `{"prefix":"198.18.0.1/16"}`, `did you mean 198.18.0.0/16`},
		{"blacklist_src", `{"prefix":""}`, `prefix: required`},
		{"blacklist_src", `{"prefix":"198.18.0.1","ttl_seconds":5,"expires":"2030-01-01T00:00:00Z"}`, `ttl_seconds: give expires or ttl_seconds`},
		{"blacklist_src", `{"prefix":"198.18.0.1","ttl":5}`, `ttl: unknown field`},
	}
	for _, b := range bad {
		_, _, err := srcTable.DecodeEntry(&cube.Cube{Name: "dd"}, json.RawMessage(b.entry))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v, want %q", b.entry, err, b.want)
		}
	}
	cfgs := []struct {
		cfg  string
		want string
	}{
		{`{"rate":{}}`, "config.rate.threshold: required"},
		{`{"scan":{}}`, "config.scan: set distinct_ports or sequential_ports"},
		{`{"scan":{"distinct_ports":5000}}`, "config.scan.distinct_ports: 5000 is more than 1024"},
		{`{"scan":{"sequential_ports":1}}`, "config.scan.sequential_ports"},
		{`{"directions":"up"}`, `config.directions: unknown value "up"`},
		{`{"mirror_interface":"a b","scan":{"distinct_ports":5}}`, "config.mirror_interface: invalid interface name"},
		{`{"mirror_interface":"lo"}`, "config.mirror_interface: only scanners are mirrored"},
		{`{"rate":{"threshold":-1}}`, "config.rate.threshold: expected an integer"},
	}
	for _, c := range cfgs {
		_, err := Type.DecodeConfig(&cube.Cube{Name: "dd", Config: json.RawMessage(c.cfg)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestBadInputLeavesStateUnchanged goes through a real engine: rejected
// changes leave the desired state and the maps as they were.
func TestBadInputLeavesStateUnchanged(t *testing.T) {
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos", Hook: datapath.XDP})
	})
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		_, err := tp.PutEntry("dd", "blacklist_src", json.RawMessage(`{"prefix":"198.18.0.0/24"}`))
		return err
	})
	before, _ := json.Marshal(e.Topology())
	for _, fn := range []func(tp *cube.Topology) error{
		func(tp *cube.Topology) error {
			_, err := tp.PutEntry("dd", "blacklist_src", json.RawMessage(`{"prefix":"198.18.0.0/33"}`))
			return err
		},
		func(tp *cube.Topology) error {
			return tp.SetConfig("dd", json.RawMessage(`{"scan":{"distinct_ports":10},"mirror_interface":"nonexistent0"}`))
		},
		func(tp *cube.Topology) error { return tp.SetConfig("dd", json.RawMessage(`{"rate":{"threshold":0}}`)) },
	} {
		err := e.Update(fn)
		if err == nil {
			t.Fatal("bad change accepted")
		}
		t.Logf("rejected: %v", err)
	}
	after, _ := json.Marshal(e.Topology())
	if !bytes.Equal(before, after) {
		t.Fatalf("state changed:\n%s\n%s", before, after)
	}
	hits, err := e.View(tenant.Admin, "dd", "counters")
	if err != nil {
		t.Fatal(err)
	}
	_ = hits
	if err := e.Update(func(tp *cube.Topology) error {
		return tp.SetConfig("dd", json.RawMessage(`{"scan":{"distinct_ports":10},"mirror_interface":"nonexistent0"}`))
	}); err == nil || !strings.Contains(err.Error(), `mirror_interface: no Linux interface named "nonexistent0"`) {
		t.Errorf("missing mirror interface: %v", err)
	}
	_ = fmt.Sprint
}
