package ddos

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

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

// srcTab is the IPv4 table of the source blacklist.
func srcTab(r *nftest.Rig) *table { return r.Ctl.(*controller).tabs["blacklist_src"] }

func key4(s string) tabKey { p, _ := ParsePrefix(s); return keyOf(p) }

// IPv4 sources (addresses and prefixes) live in the table, IPv6 ones in the
// hash and the trie: all drop, count and show in the hits view;
// single-entry changes and syncs of the model add and remove them.
func TestExactIPv4Table(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			r := nftest.New(t, Type, model(h.hook, nil,
				[]Entry{{Prefix: "198.18.0.7"}, {Prefix: "2001:db8::7"}, {Prefix: "198.18.4.0/24"}}, nil))
			ctl := r.Ctl.(*controller)
			tab := srcTab(r)
			if !tab.has(key4("198.18.0.7")) || !tab.has(key4("198.18.4.0/24")) || tab.len() != 2 {
				t.Fatalf("IPv4 entries not in the table (%d entries)", tab.len())
			}
			if c := tab.cfg(); c.N != 2 || c.Lens[0].Tag != 33 || c.Lens[1].Tag != 25 || ctl.writtenTab[0] != c {
				t.Errorf("lengths in the settings: %+v", ctl.writtenTab[0])
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
			if c := countersOf(t, r); c["dropped_src_blacklist"] != 3 || c["passed"] != 2 {
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
			if tab.has(key4("198.18.0.7")) || !tab.has(key4("198.18.0.9")) {
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
			if tab.len() != 2 || tab.cfg().N != 1 || ctl.n["dd_src_exact"] != 0 || ctl.n["dd_src_lpm"] != 0 || ctl.n["dd_src_lpm4"] != 0 {
				t.Errorf("table %d entries, %d lengths, n %v", tab.len(), tab.cfg().N, ctl.n)
			}
			// Empty: the fast path no longer looks the table up.
			if err := r.Update(model(h.hook, nil, nil, nil)); err != nil {
				t.Fatal(err)
			}
			if tab.len() != 0 || ctl.writtenTab[0].N != 0 {
				t.Errorf("table not emptied: %d entries, settings %+v", tab.len(), ctl.writtenTab[0])
			}
			if v := run(v4); v != h.pass {
				t.Errorf("emptied table still drops: %d", v)
			}
		})
	}
}

// An address with no room in the table goes to the fallback trie and drops
// from there; a new controller (daemon restart) reads the table back,
// counters included, and moves the address into the table, where it now
// finds room, with its counters.
func TestExactIPv4TableOverflowAndRestart(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.1"}}, nil))
	ctl := r.Ctl.(*controller)
	tab := srcTab(r)
	a := key4("198.18.0.2")
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
	if tab.has(a) || ctl.n["dd_src_lpm4"] != 1 || ctl.flags()&fSrcLPM4 == 0 {
		t.Fatalf("overflowing address: in table %v, dd_src_lpm4 holds %d", tab.has(a), ctl.n["dd_src_lpm4"])
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
	tab2 := srcTab(r)
	if tab2.seed != tab.seed || !tab2.has(key4("198.18.0.1")) || !tab2.has(a) || ctl2.n["dd_src_lpm4"] != 0 || ctl2.flags()&fSrcLPM4 != 0 {
		t.Errorf("table not read back, or the fallback entry not moved in: seed %#x/%#x, %d entries, n %v",
			tab2.seed, tab.seed, tab2.len(), ctl2.n)
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
	if x, _ := hitOf(t, r, "198.18.0.2/32"); x.Packets != 3 {
		t.Errorf("moved entry counts %+v, want 3 packets", x)
	}
	if err := r.Ctl.(cube.EntryWriter).DeleteEntry(r.Handle(), m, "blacklist_src", &Entry{Prefix: "198.18.0.2"}); err != nil {
		t.Fatal(err)
	}
	if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.0.2", "198.19.0.1", 1, 2, nil)).Verdict; v != datapath.XDPRedirect {
		t.Errorf("deleted entry still drops: %d", v)
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
		if _, _, err := r.Prog.EBPF().Benchmark(f, rep, nil); err != nil {
			t.Fatal(err)
		}
	}
	x, ok := hitOf(t, r, "198.18.0.7/32")
	if !ok || x.Packets != 2*n || x.Bytes != 2*n*uint64(len(f)) {
		t.Errorf("hits %+v, want %d packets, %d bytes", x, 2*n, 2*n*len(f))
	}
	var te tabEntry
	vals, _ := r.Prog.Map("dd_src_t4v")
	idx, _ := srcTab(r).index(key4("198.18.0.7"))
	if err := vals.Lookup(idx, &te); err != nil || te.Packets != 2<<19 || te.Recent>>recShift != 2000 {
		t.Errorf("entry %+v %v: want two folds", te, err)
	}
	if c := countersOf(t, r); c["dropped_src_blacklist"] != 2*n {
		t.Errorf("counters %v", c)
	}
}

// A full table: a million entries (half the slots) of four lengths,
// nested: every entry is found within its probes, the most specific wins,
// others are not found.
func TestIPv4TableMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	r := nftest.New(t, Type, model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.1"}}, nil))
	ctl := r.Ctl.(*controller)
	tab := srcTab(r)
	const n = MaxEntries - 1
	ks := make([]tabKey, n)
	pre := func(a uint32, bits int) tabKey {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], a)
		return keyOf(netip.PrefixFrom(netip.AddrFrom4(b), bits))
	}
	for i := range ks {
		switch {
		case i < 2048: // /16s of 248.0.0.0/5
			ks[i] = pre(0xf8000000+uint32(i)<<16, 16)
		case i < 4096: // /20s inside the first 128 /16s
			ks[i] = pre(0xf8000000+uint32(i-2048)<<12, 20)
		case i < n/2: // /24s of 240.0.0.0/5
			ks[i] = pre(0xf0000000+uint32(i)<<8, 24)
		default: // /32s in 232.0.0.0/8, and inside the first /24s
			ks[i] = pre(0xe8000000+uint32(i), 32)
			if i < n/2+1000 {
				ks[i] = pre(0xf0000000+uint32(i-n/2+4096)<<8+7, 32)
			}
		}
	}
	start := time.Now()
	over, err := tab.add(r.Prog, ks, make([]tabEntry, n))
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.writeConfig(r.Handle()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d entries in the table in %v, %d with no room; lengths %+v", tab.len(), time.Since(start), len(over), tab.cfg())
	if tab.len()+len(over) != MaxEntries || tab.cfg().N != 4 {
		t.Errorf("%d in the table + %d over, want %d; %d lengths", tab.len(), len(over), MaxEntries, tab.cfg().N)
	}
	for _, c := range []struct {
		src  string
		want tabKey // 0: passes
	}{
		{"198.18.0.1", key4("198.18.0.1")},
		{"248.0.0.1", key4("248.0.0.0/20")},
		{"248.0.16.1", key4("248.0.16.0/20")},
		{"248.7.240.1", key4("248.7.240.0/20")},
		{"248.200.1.1", key4("248.200.0.0/16")},
		{"255.255.3.3", key4("255.255.0.0/16")},
		{"240.0.16.7", key4("240.0.16.7")},
		{"240.0.16.8", key4("240.0.16.0/24")},
		{"247.255.255.1", key4("247.255.255.0/24")},
		{"232.8.0.1", key4("232.8.0.1")},
		{"232.0.0.1", 0},
		{"198.18.0.2", 0},
	} {
		var before entryVal
		if c.want != 0 {
			if !tab.has(c.want) {
				continue // no room: not the fast path's business
			}
			tab.entry(r.Prog, c.want, &before)
		}
		v := r.RunTransparent(datapath.Ingress, nftest.UDP4(c.src, "198.18.0.1", 1, 2, nil)).Verdict
		if (v == datapath.XDPDrop) != (c.want != 0) {
			t.Errorf("%s: verdict %d, want drop=%v", c.src, v, c.want != 0)
		}
		if c.want != 0 {
			var after entryVal
			tab.entry(r.Prog, c.want, &after)
			if after.Packets != before.Packets+1 {
				t.Errorf("%s: %s counted %d packets, want 1", c.src, c.want.prefix(), after.Packets-before.Packets)
			}
		}
	}
}
