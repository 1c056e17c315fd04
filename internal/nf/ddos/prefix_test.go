package ddos

import (
	"fmt"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// lpmRig drives one blacklist of a cube by single-entry writes and checks,
// packet by packet, which entry (if any) drops it and counts it.
type lpmRig struct {
	t       *testing.T
	r       *nftest.Rig
	h       hookCase
	table   string
	entries map[netip.Prefix]bool // written, not deleted
}

func newLPMRig(t *testing.T, h hookCase, table string) *lpmRig {
	return &lpmRig{t: t, r: nftest.New(t, Type, model(h.hook, nil, nil, nil)), h: h, table: table,
		entries: map[netip.Prefix]bool{}}
}

func (x *lpmRig) put(p string, expires *time.Time) {
	x.t.Helper()
	if err := x.r.Ctl.(cube.EntryWriter).PutEntry(x.r.Handle(), x.r.Model, x.table, &Entry{Prefix: p, Expires: expires}); err != nil {
		x.t.Fatal(err)
	}
	x.entries[netip.MustParsePrefix(p)] = true
}

func (x *lpmRig) del(p string) {
	x.t.Helper()
	if err := x.r.Ctl.(cube.EntryWriter).DeleteEntry(x.r.Handle(), x.r.Model, x.table, &Entry{Prefix: p}); err != nil {
		x.t.Fatal(err)
	}
	delete(x.entries, netip.MustParsePrefix(p))
}

func (x *lpmRig) counts() map[netip.Prefix]uint64 {
	x.t.Helper()
	out := map[netip.Prefix]uint64{}
	for p := range x.entries {
		v, err := x.r.Ctl.(*controller).entry(x.r.Handle(), sideOf(x.table), p)
		if err != nil {
			x.t.Fatalf("%s: %v", p, err)
		}
		out[p] = v.Packets
	}
	return out
}

// expect sends one packet with addr as the table's address (source or
// destination) and checks that want (or nothing: "") drops and counts it,
// and no other entry.
func (x *lpmRig) expect(addr, want string) {
	x.t.Helper()
	other := "198.51.100.1"
	f := nftest.UDP4(addr, other, 1, 2, nil)
	if x.table == "blacklist_dst" {
		f = nftest.UDP4(other, addr, 1, 2, nil)
	}
	before := x.counts()
	v := x.r.RunTransparent(datapath.Ingress, f).Verdict
	wantV := x.h.drop
	if want == "" {
		wantV = x.h.pass
	}
	if v != wantV {
		x.t.Errorf("%s: verdict %d, want %d (entry %q)", addr, v, wantV, want)
	}
	for p, n := range x.counts() {
		d := n - before[p]
		if w := p.String() == want; (d == 1) != w || d > 1 {
			x.t.Errorf("%s: entry %s counted %d packets (want %s to count it)", addr, p, d, want)
		}
	}
}

// The most specific live entry wins, across many lengths (/0 to /32), on
// both blacklists and both hooks; its counters count; an expired entry no
// longer matches (the next shorter one does); removing an entry gives the
// packet back to the next shorter one.
func TestPrefixLongestMatch(t *testing.T) {
	for _, h := range hooks {
		for _, tb := range []string{"blacklist_src", "blacklist_dst"} {
			t.Run(string(h.hook)+"/"+tb, func(t *testing.T) {
				x := newLPMRig(t, h, tb)
				a := netip.MustParseAddr("10.1.2.3")
				lens := []int{16, 32, 0, 24, 8, 25, 1, 31, 17, 15}
				for _, b := range lens {
					x.put(netip.PrefixFrom(a, b).Masked().String(), nil)
				}
				ctl := x.r.Ctl.(*controller)
				tab := ctl.tabs[tb]
				if tab.len() != len(lens) || tab.cfg().N != uint32(len(lens)) || ctl.n[sideOf(tb).lpm4] != 0 {
					t.Fatalf("table holds %d entries of %d lengths, fallback %d", tab.len(), tab.cfg().N, ctl.n[sideOf(tb).lpm4])
				}
				for _, c := range []struct{ addr, want string }{
					{"10.1.2.3", "10.1.2.3/32"},
					{"10.1.2.2", "10.1.2.2/31"},
					{"10.1.2.4", "10.1.2.0/25"},
					{"10.1.2.130", "10.1.2.0/24"},
					{"10.1.3.1", "10.1.0.0/17"},
					{"10.1.200.1", "10.1.0.0/16"},
					{"10.0.0.1", "10.0.0.0/15"},
					{"10.200.0.1", "10.0.0.0/8"},
					{"11.0.0.1", "0.0.0.0/1"},
					{"200.0.0.1", "0.0.0.0/0"},
				} {
					x.expect(c.addr, c.want)
				}
				// Expired (a deadline in the past): the next shorter one.
				past := time.Now().Add(-time.Minute)
				x.put("10.1.2.0/24", &past)
				x.expect("10.1.2.130", "10.1.0.0/17")
				x.expect("10.1.2.4", "10.1.2.0/25")
				soon := time.Now().Add(time.Hour)
				x.put("10.1.2.0/24", &soon)
				x.expect("10.1.2.130", "10.1.2.0/24")
				// Removal, longest first: each gives way to the next.
				sort.Sort(sort.Reverse(sort.IntSlice(lens)))
				for i, b := range lens {
					x.del(netip.PrefixFrom(a, b).Masked().String())
					want := ""
					if i+1 < len(lens) {
						want = netip.PrefixFrom(a, lens[i+1]).Masked().String()
					}
					x.expect("10.1.2.3", want)
				}
				if tab.len() != 0 || ctl.writtenTab[0].N+ctl.writtenTab[1].N != 0 {
					t.Errorf("table not empty: %d entries, settings %+v", tab.len(), ctl.writtenTab)
				}
			})
		}
	}
}

// More lengths than the table lists: those that find no place go to the
// fallback trie, and the longest match holds across the table and the trie
// (the trie's match takes its place among the table's lengths); an expired
// entry in the trie gives way to a shorter one of the table; a resync moves
// what fits into the table, counters included.
func TestPrefixFallback(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			x := newLPMRig(t, h, "blacklist_src")
			ctl := x.r.Ctl.(*controller)
			tab := ctl.tabs["blacklist_src"]
			a := netip.MustParseAddr("10.1.2.3")
			pre := func(b int) string { return netip.PrefixFrom(a, b).Masked().String() }
			// The table's 16 places: the even lengths 2..32. Then the odd
			// ones, which go to the trie.
			for b := 2; b <= 32; b += 2 {
				x.put(pre(b), nil)
			}
			odd := []int{31, 27, 19, 9, 1}
			for _, b := range odd {
				x.put(pre(b), nil)
			}
			// A length already listed still goes to the table.
			x.put("10.9.9.0/24", nil)
			if tab.cfg().N != tabLens || ctl.n["dd_src_lpm4"] != len(odd) || !tab.has(key4("10.9.9.0/24")) {
				t.Fatalf("%d lengths in the table, %d entries in the fallback trie", tab.cfg().N, ctl.n["dd_src_lpm4"])
			}
			for _, b := range odd {
				if tab.has(key4(pre(b))) {
					t.Errorf("%s in the table", pre(b))
				}
			}
			x.expect("10.1.2.3", pre(32))
			x.expect("10.1.2.2", pre(31)) // trie
			x.expect("10.1.2.0", pre(30))
			x.expect("10.1.2.12", pre(28))
			x.expect("10.1.2.17", pre(27)) // trie
			x.expect("10.1.2.33", pre(26))
			x.expect("10.1.16.1", pre(19)) // trie
			x.expect("10.1.32.1", pre(18))
			x.expect("10.0.0.1", pre(14))  // 10.0.0.0/15 is not listed
			x.expect("10.127.0.1", pre(9)) // trie
			x.expect("10.128.0.1", pre(8))
			x.expect("11.0.0.1", pre(6))
			x.expect("64.0.0.1", pre(1)) // trie
			x.expect("128.0.0.1", "")
			// Expired in the trie: the table's next shorter entry.
			past := time.Now().Add(-time.Minute)
			x.put(pre(27), &past)
			x.expect("10.1.2.17", pre(26))
			x.put(pre(27), nil)
			x.expect("10.1.2.17", pre(27))
			// Removing the trie's entries gives way to the table's;
			// removing the table's frees places for the trie's lengths
			// at the next resync (the longest first, here /27 and /19).
			x.del(pre(31))
			x.expect("10.1.2.2", pre(30))
			for _, b := range []int{30, 28} {
				x.del(pre(b))
			}
			x.expect("10.1.2.1", pre(27))
			if tab.cfg().N != tabLens-2 {
				t.Errorf("%d lengths listed, want %d", tab.cfg().N, tabLens-2)
			}
			before := x.counts()
			var rows []Entry
			for p := range x.entries {
				rows = append(rows, Entry{Prefix: p.String()})
			}
			m := model(h.hook, nil, rows, nil)
			if err := x.r.Update(m); err != nil {
				t.Fatal(err)
			}
			if ctl.n["dd_src_lpm4"] != 2 || tab.cfg().N != tabLens {
				t.Errorf("after resync: %d in the trie, %d lengths in the table", ctl.n["dd_src_lpm4"], tab.cfg().N)
			}
			moved := 0
			for _, b := range []int{27, 19, 9, 1} {
				if tab.has(key4(pre(b))) {
					moved++
				}
			}
			if moved != 2 {
				t.Errorf("%d entries moved from the trie into the table, want 2", moved)
			}
			if after := x.counts(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("counters changed by the resync:\n%v\n%v", before, after)
			}
			x.expect("10.1.2.1", pre(27))
			x.expect("10.1.16.1", pre(19))
			x.expect("10.127.0.1", pre(9))
			x.expect("64.0.0.1", pre(1))
		})
	}
}

// IPv4 entries that earlier versions kept in the IPv6 maps (the exact hash,
// the trie, as ::ffff:a.b.c.d) move to the IPv4 table at the next resync,
// with their counters.
func TestIPv4EntriesMoveFromOldMaps(t *testing.T) {
	r := nftest.New(t, Type, model(datapath.XDP, nil, nil, nil))
	exact, _ := r.Prog.Map("dd_src_exact")
	lpm, _ := r.Prog.Map("dd_dst_lpm")
	if err := exact.Put(key16(netip.MustParseAddr("198.18.0.7")), entryVal{Packets: 5, Bytes: 500}); err != nil {
		t.Fatal(err)
	}
	if err := lpm.Put(lpmOf(netip.MustParsePrefix("::ffff:198.19.0.0/112")), entryVal{Packets: 7, Bytes: 700}); err != nil {
		t.Fatal(err)
	}
	m := model(datapath.XDP, nil, []Entry{{Prefix: "198.18.0.7"}}, []Entry{{Prefix: "198.19.0.0/16"}})
	if err := r.Update(m); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table, prefix string
		packets       uint64
	}{{"blacklist_src", "198.18.0.7/32", 5}, {"blacklist_dst", "198.19.0.0/16", 7}} {
		v, err := r.Ctl.(*controller).entry(r.Handle(), sideOf(c.table), netip.MustParsePrefix(c.prefix))
		if err != nil || v.Packets != c.packets || !r.Ctl.(*controller).tabs[c.table].has(key4(c.prefix)) {
			t.Errorf("%s: %+v %v, want %d packets, in the table", c.prefix, v, err, c.packets)
		}
	}
	var k addrKey
	var v entryVal
	if exact.Iterate().Next(&k, &v) {
		t.Errorf("dd_src_exact still holds %v", netip.AddrFrom16(k))
	}
	if v := r.RunTransparent(datapath.Ingress, nftest.UDP4("198.18.1.1", "198.19.3.3", 1, 2, nil)).Verdict; v != datapath.XDPDrop {
		t.Errorf("moved destination prefix does not drop: %d", v)
	}
}
