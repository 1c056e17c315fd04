package ddos

import (
	"net/netip"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

func hitOf(t *testing.T, r *nftest.Rig, prefix string) (Hit, bool) {
	t.Helper()
	hits, err := listHits(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range hits.([]Hit) {
		if x.Prefix == prefix {
			return x, true
		}
	}
	return Hit{}, false
}

// Exact IPv4 sources live in the table, IPv6 ones in the hash: both drop,
// count and show in the hits view; single-entry changes and syncs of the
// model add and remove them.
func TestExactIPv4Table(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, nil,
				[]Entry{{Prefix: "198.18.0.7"}, {Prefix: "2001:db8::7"}, {Prefix: "198.18.4.0/24"}}, nil))
			ctl := r.Ctl.(*controller)
			if !ctl.tab.has(tabAddr(netip.MustParseAddr("198.18.0.7"))) || ctl.tab.len() != 1 {
				t.Fatalf("IPv4 address not in the table (%d entries)", ctl.tab.len())
			}
			if ctl.n["dd_src_exact"] != 1 {
				t.Errorf("dd_src_exact holds %d entries, want the IPv6 one", ctl.n["dd_src_exact"])
			}
			v4 := nftest.UDP4("198.18.0.7", "198.19.0.1", 1, 2, make([]byte, 10))
			v6 := nftest.UDP6("2001:db8::7", "2001:db8::1", 1, 2, nil)
			run := func(f []byte) uint32 { return r.RunTransparent(datapath.Ingress, f).Verdict }
			verdicts := []struct {
				name  string
				frame []byte
				want  uint32
			}{
				{"IPv4 exact", v4, h.drop},
				{"IPv6 exact", v6, h.drop},
				{"IPv4 prefix", nftest.UDP4("198.18.4.4", "198.19.0.1", 1, 2, nil), h.drop},
				{"IPv4 unlisted", nftest.UDP4("198.18.0.8", "198.19.0.1", 1, 2, nil), h.pass},
				{"IPv6 unlisted", nftest.UDP6("2001:db8::8", "2001:db8::1", 1, 2, nil), h.pass},
			}
			for _, c := range verdicts {
				if v := run(c.frame); v != c.want {
					t.Errorf("%s: verdict %d, want %d", c.name, v, c.want)
				}
			}
			if x, ok := hitOf(t, r, "198.18.0.7/32"); !ok || x.Packets != 1 || x.Bytes != uint64(len(v4)) || x.Table != "blacklist_src" {
				t.Errorf("hits of 198.18.0.7: %+v %v (want 1 packet, %d bytes)", x, ok, len(v4))
			}
			if x, ok := hitOf(t, r, "2001:db8::7/128"); !ok || x.Packets != 1 {
				t.Errorf("hits of 2001:db8::7: %+v %v", x, ok)
			}
			if c := counters(t, r); c["dropped_src_blacklist"] != 3 || c["passed"] != 2 {
				t.Errorf("counters %v", c)
			}

			// Single-entry writes (what the engine does for table-only
			// changes).
			ew := r.Ctl.(cube.EntryWriter)
			if err := ew.PutEntry(r.Handle(), r.Model, "blacklist_src", &Entry{Prefix: "198.18.0.9/32"}); err != nil {
				t.Fatal(err)
			}
			if v := run(nftest.UDP4("198.18.0.9", "198.19.0.1", 1, 2, nil)); v != h.drop {
				t.Errorf("entry put alone does not drop: %d", v)
			}
			if err := ew.DeleteEntry(r.Handle(), r.Model, "blacklist_src", &Entry{Prefix: "198.18.0.7/32"}); err != nil {
				t.Fatal(err)
			}
			if v := run(v4); v != h.pass {
				t.Errorf("deleted IPv4 entry still drops: %d", v)
			}
			if err := ew.DeleteEntry(r.Handle(), r.Model, "blacklist_src", &Entry{Prefix: "2001:db8::7"}); err != nil {
				t.Fatal(err)
			}
			if v := run(v6); v != h.pass {
				t.Errorf("deleted IPv6 entry still drops: %d", v)
			}
			if ctl.tab.has(tabAddr(netip.MustParseAddr("198.18.0.7"))) || !ctl.tab.has(tabAddr(netip.MustParseAddr("198.18.0.9"))) {
				t.Error("table out of step with the single-entry changes")
			}

			// Model syncs: the entry put alone (not in the model) goes; a
			// re-listed one comes back with a fresh counter.
			if err := r.Update(model(h.hook, nil, []Entry{{Prefix: "198.18.0.7"}, {Prefix: "198.18.0.10"}}, nil)); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				src  string
				want uint32
			}{{"198.18.0.7", h.drop}, {"198.18.0.10", h.drop}, {"198.18.0.9", h.pass}, {"198.18.4.4", h.pass}} {
				if v := run(nftest.UDP4(c.src, "198.19.0.1", 1, 2, nil)); v != c.want {
					t.Errorf("after sync, %s: verdict %d, want %d", c.src, v, c.want)
				}
			}
			if v := run(v6); v != h.pass {
				t.Errorf("after sync, IPv6 source dropped: %d", v)
			}
			if x, _ := hitOf(t, r, "198.18.0.7/32"); x.Packets != 1 {
				t.Errorf("re-listed entry: %+v (want a fresh counter)", x)
			}
			if ctl.tab.len() != 2 || ctl.n["dd_src_exact"] != 0 || ctl.n["dd_src_lpm"] != 0 {
				t.Errorf("table %d entries, n %v", ctl.tab.len(), ctl.n)
			}
			// Empty: the fast path no longer looks the table up.
			if err := r.Update(model(h.hook, nil, nil, nil)); err != nil {
				t.Fatal(err)
			}
			if ctl.tab.len() != 0 || ctl.flags()&fSrcTab != 0 {
				t.Errorf("table not emptied: %d entries, flags %#x", ctl.tab.len(), ctl.flags())
			}
			if v := run(v4); v != h.pass {
				t.Errorf("emptied table still drops: %d", v)
			}
		})
	}
}

// An address with no room in the table goes to the hash of exact addresses;
// a new controller (daemon restart) reads the table back, counters
// included, and leaves each address where it is.
func TestExactIPv4TableOverflowAndRestart(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.1"}}, nil))
	ctl := r.Ctl.(*controller)
	tab := ctl.tab
	a := tabAddr(netip.MustParseAddr("198.18.0.2"))
	home := tab.home(a)
	// Fill the probe sequence of 198.18.0.2, in the mirror only.
	var filled []uint32
	for i := uint32(0); i < tabProbes; i++ {
		s := (home + i) & (tabSlots - 1)
		if tab.slots[s] != 0 {
			t.Skip("198.18.0.1 is in the way")
		}
		tab.slots[s] = 1
		filled = append(filled, s)
	}
	ew := r.Ctl.(cube.EntryWriter)
	if err := ew.PutEntry(r.Handle(), r.Model, "blacklist_src", &Entry{Prefix: "198.18.0.2"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range filled {
		tab.slots[s] = 0
	}
	if tab.has(a) || ctl.n["dd_src_exact"] != 1 {
		t.Fatalf("overflowing address: in table %v, dd_src_exact holds %d", tab.has(a), ctl.n["dd_src_exact"])
	}
	for _, src := range []string{"198.18.0.1", "198.18.0.2", "198.18.0.2"} {
		if v := r.RunTransparent(datapath.Ingress, nftest.UDP4(src, "198.19.0.1", 1, 2, nil)).Verdict; v != datapath.XDPDrop {
			t.Errorf("%s: verdict %d, want drop", src, v)
		}
	}
	if x, _ := hitOf(t, r, "198.18.0.2/32"); x.Packets != 0 {
		// not in the model: the hits view walks the model's tables
		t.Errorf("hit of an entry outside the model: %+v", x)
	}

	// Restart: a new controller syncs the model that holds both.
	r.Ctl = Type.New()
	m := model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.1"}, {Prefix: "198.18.0.2"}}, nil)
	if err := r.Update(m); err != nil {
		t.Fatal(err)
	}
	ctl2 := r.Ctl.(*controller)
	if ctl2.tab.seed != tab.seed || !ctl2.tab.has(tabAddr(netip.MustParseAddr("198.18.0.1"))) || ctl2.tab.has(a) {
		t.Errorf("table not read back: seed %#x/%#x, %d entries", ctl2.tab.seed, tab.seed, ctl2.tab.len())
	}
	for _, c := range []struct {
		prefix  string
		packets uint64
	}{{"198.18.0.1/32", 1}, {"198.18.0.2/32", 2}} {
		if x, _ := hitOf(t, r, c.prefix); x.Packets != c.packets {
			t.Errorf("%s after restart: %+v, want %d packets", c.prefix, x, c.packets)
		}
	}
	for _, src := range []string{"198.18.0.1", "198.18.0.2"} {
		if v := r.RunTransparent(datapath.Ingress, nftest.UDP4(src, "198.19.0.1", 1, 2, nil)).Verdict; v != datapath.XDPDrop {
			t.Errorf("%s after restart: verdict %d, want drop", src, v)
		}
	}
	// Deleting the overflowed one through the new controller.
	if err := r.Ctl.(cube.EntryWriter).DeleteEntry(r.Handle(), m, "blacklist_src", &Entry{Prefix: "198.18.0.2"}); err != nil {
		t.Fatal(err)
	}
	if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.0.2", "198.19.0.1", 1, 2, nil)).Verdict; v != datapath.XDPRedirect {
		t.Errorf("deleted overflowed entry still drops: %d", v)
	}
}

// The counters of a table entry stay exact across the fold of its packed
// recent counts (every 2^19 packets).
func TestExactIPv4TableCounterFold(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.7"}}, nil))
	f := nftest.UDP4("198.18.0.7", "198.19.0.1", 1, 2, make([]byte, 100))
	hop, err := datapath.NewHop(datapath.DstIface, nftest.FakeIfindex, 0, 0, []datapath.Transparent{{Slot: 1}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1<<19 + 1000
	for _, rep := range []int{n, n} {
		if err := r.DP.SetMetadata(datapath.Metadata{Cube: datapath.MaxSlots, Hop: hop}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Cube.Program().Benchmark(f, rep, nil); err != nil {
			t.Fatal(err)
		}
	}
	x, ok := hitOf(t, r, "198.18.0.7/32")
	if !ok || x.Packets != 2*n || x.Bytes != 2*n*uint64(len(f)) {
		t.Errorf("hits %+v, want %d packets, %d bytes", x, 2*n, 2*n*len(f))
	}
	var te tabEntry
	vals, _ := r.Cube.Map(mapTabVals)
	idx, _ := r.Ctl.(*controller).tab.index(tabAddr(netip.MustParseAddr("198.18.0.7")))
	if err := vals.Lookup(idx, &te); err != nil || te.Packets != 2<<19 || te.Recent>>recShift != 2000 {
		t.Errorf("entry %+v %v: want two folds", te, err)
	}
	if c := counters(t, r); c["dropped_src_blacklist"] != 2*n {
		t.Errorf("counters %v", c)
	}
}

// A full table (a million addresses, half the slots): every address is
// found within its probes, others are not.
func TestExactIPv4TableMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.1"}}, nil))
	tab := r.Ctl.(*controller).tab
	const n = MaxEntries - 1
	as := make([]uint32, n)
	for i := range as {
		// 240.0.0.0/8 (reserved), then 198.19.0.0/16 for the last 65536
		b := [4]byte{240, byte(i >> 16), byte(i >> 8), byte(i)}
		if i >= n-65536 {
			b = [4]byte{198, 19, byte(i >> 8), byte(i)}
		}
		as[i] = tabAddr(netip.AddrFrom4(b))
	}
	over, err := tab.add(r.Cube, as, make([]uint64, n))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d addresses in the table, %d with no room", tab.len(), len(over))
	if tab.len()+len(over) != MaxEntries {
		t.Errorf("%d in the table + %d over, want %d", tab.len(), len(over), MaxEntries)
	}
	for _, c := range []struct {
		src  string
		drop bool
	}{{"198.18.0.1", true}, {"198.19.0.0", true}, {"198.19.255.255", true}, {"198.19.77.3", true}, {"198.18.0.2", false}} {
		a := tabAddr(netip.MustParseAddr(c.src))
		if c.drop && !tab.has(a) {
			continue // no room: not the fast path's business
		}
		v := r.RunTransparent(datapath.Ingress, nftest.UDP4(c.src, "198.18.0.1", 1, 2, nil)).Verdict
		if (v == datapath.XDPDrop) != c.drop {
			t.Errorf("%s: verdict %d, want drop=%v", c.src, v, c.drop)
		}
	}
}
