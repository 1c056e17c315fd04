package slicer

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/vishvananda/netlink"
)

// countingMap counts the writes to one map (puts and deletes), and fails
// every write after the budget of writes left (failAfter; < 0: none fails).
type countingMap struct {
	bpfMap
	name string
	w    *writes
}

type writes struct {
	n         map[string]int
	failAfter int
}

var errCrash = errors.New("crashed here")

func (m countingMap) count() error {
	if m.w.failAfter == 0 {
		return errCrash
	}
	m.w.failAfter--
	m.w.n[m.name]++
	return nil
}

func (m countingMap) Put(k, v any) error {
	if err := m.count(); err != nil {
		return err
	}
	return m.bpfMap.Put(k, v)
}

func (m countingMap) Delete(k any) error {
	if err := m.count(); err != nil {
		return err
	}
	return m.bpfMap.Delete(k)
}

// countWrites makes the controller's maps count their writes into the
// returned record until the test ends.
func countWrites(t *testing.T) *writes {
	w := &writes{n: map[string]int{}, failAfter: -1}
	openMap = func(h cube.Handle, name string) (bpfMap, error) {
		m, err := h.Map(name)
		if err != nil {
			return nil, err
		}
		return countingMap{m, name, w}, nil
	}
	t.Cleanup(func() {
		openMap = func(h cube.Handle, name string) (bpfMap, error) {
			m, err := h.Map(name)
			if err != nil {
				return nil, err
			}
			return m, nil
		}
	})
	return w
}

// chainSlice is slice k of a big slicer: its own chain entry and a dst
// rule of its own.
func chainSlice(k int) Slice {
	return Slice{Name: fmt.Sprintf("c%d", k), ID: k, Chain: fmt.Sprintf("x%d:in", k), Rules: []Rule{{Dst: fmt.Sprintf("198.18.%d.%d", k>>8, k&0xff)}}}
}

// A change of one slice writes that slice's entries, whatever the slicer
// holds: adding the 301st slice puts its sl_slices entry, its prefix's
// entries and sl_config at most; changing its rate rewrites its
// sl_slices entry alone; deleting it takes out what adding it put in.
// (Writing the arrays whole, as before, is thousands of writes.)
func TestOneSliceChangeWritesItsRows(t *testing.T) {
	var list []Slice
	for k := 1; k <= 300; k++ {
		list = append(list, chainSlice(k))
	}
	list = slices.Clip(list) // each step appends its own
	r := nftest.New(t, Type, model(datapath.TC, Settings{Uplink: "up"}, list...))
	w := countWrites(t)
	// The first Sync of a new controller (a restarted daemon) reads the
	// maps and writes nothing that is already there.
	r.Ctl = Type.New()
	for _, step := range []struct {
		what string
		list []Slice
		max  int
	}{
		{"the same slices again, by a new controller", list, 0},
		{"one slice more", append(list, chainSlice(301)), 4},
		{"its rate changed", append(list, func() Slice { s := chainSlice(301); s.RateBps = 1e6; return s }()), 1},
		{"it deleted", list, 4},
	} {
		clear(w.n)
		if err := r.Update(model(datapath.TC, Settings{Uplink: "up"}, step.list...)); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range w.n {
			total += n
		}
		if total > step.max || w.n["sl_slices"] != min(step.max, 1) || w.n["sl_vlan"] > 0 || w.n["sl_dscp"] > 0 || w.n["sl_ports"] > 0 {
			t.Errorf("%s: %d writes %v, want at most %d and at most one slice's", step.what, total, w.n, step.max)
		}
	}
	// and the datapath follows: slice 301's address is classified into it
	// while it exists
	frame := nftest.UDP4("198.18.0.1", "198.18.1.45", 1000, 2000, nil) // 1<<8 | 45 = 301
	for _, c := range []struct {
		list []Slice
		want uint32
	}{{append(list, chainSlice(301)), 301}, {list, 0}} {
		if err := r.Update(model(datapath.TC, Settings{Uplink: "up"}, c.list...)); err != nil {
			t.Fatal(err)
		}
		if got := classified(t, r, frame); got != c.want {
			t.Errorf("slice %d's frame classified into %d, want %d", 301, got, c.want)
		}
	}
}

// classified is the id of the slice that counted frame in, 0: none.
func classified(t *testing.T, r *nftest.Rig, frame []byte) uint32 {
	t.Helper()
	before := map[string]uint64{}
	for _, s := range viewStatus(t, r).Slices {
		before[s.Name] = s.InPackets
	}
	r.Run("up", frame)
	for _, s := range viewStatus(t, r).Slices {
		if s.InPackets > before[s.Name] {
			return uint32(s.ID)
		}
	}
	return 0
}

// A change that gives slice id 5 to another tenant's slice (a deleted,
// b created with its id) crashes after each of its writes in turn. At
// every point a's traffic leaves by a's port or is dropped, and b's by b's
// port or is dropped: never one into the other's chain. A restarted
// controller then finishes the change.
func TestCrashMidSyncDivertsNoTraffic(t *testing.T) {
	for _, h := range hooks {
		t.Run(string(h.hook), func(t *testing.T) {
			before := model(h.hook, Settings{Uplink: "up", Default: "c"},
				Slice{Name: "a", ID: 5, Tenant: "ta", Port: "s1", Rules: []Rule{{Dst: "198.18.1.0/24"}, {VLAN: intp(10)}}},
				Slice{Name: "c", ID: 6, Tenant: "tc", Port: "s3", Rules: []Rule{{Dst: "198.18.3.0/24"}}})
			after := model(h.hook, Settings{Uplink: "up", Default: "c"},
				Slice{Name: "b", ID: 5, Tenant: "tb", Port: "s2", Rules: []Rule{{Dst: "198.18.2.0/24"}, {VLAN: intp(20)}}},
				Slice{Name: "c", ID: 6, Tenant: "tc", Port: "s3", Rules: []Rule{{Dst: "198.18.3.0/24"}}})
			r := nftest.New(t, Type, before)
			w := countWrites(t)
			sA, sB, sC := r.Model.Port("s1").Index, r.Model.Port("s2").Index, r.Model.Port("s3").Index
			frames := []struct {
				what  string
				frame []byte
				may   []int // ports it may leave by (c's: the default); dropped is always allowed
			}{
				{"a's prefix", nftest.UDP4("198.19.0.1", "198.18.1.1", 1000, 2000, nil), []int{sA, sC}},
				{"a's VLAN", nftest.VLANTagged(nftest.UDP4("198.19.0.1", "198.18.9.1", 1000, 2000, nil), 10), []int{sA, sC}},
				{"b's prefix", nftest.UDP4("198.19.0.1", "198.18.2.1", 1000, 2000, nil), []int{sB, sC}},
				{"b's VLAN", nftest.VLANTagged(nftest.UDP4("198.19.0.1", "198.18.9.1", 1000, 2000, nil), 20), []int{sB, sC}},
				{"c's prefix", nftest.UDP4("198.19.0.1", "198.18.3.1", 1000, 2000, nil), []int{sC}},
			}
			check := func(when string) {
				t.Helper()
				for _, f := range frames {
					res := r.Run("up", f.frame)
					if res.Verdict == h.sent && !slices.Contains(f.may, res.Port) {
						t.Errorf("%s: %s left by port %d, may only by %v", when, f.what, res.Port, f.may)
					}
				}
			}
			for k := 0; ; k++ {
				w.failAfter = -1
				r.Ctl = Type.New()
				if err := r.Update(before); err != nil {
					t.Fatal(err)
				}
				w.failAfter = k
				err := r.Update(after)
				if err == nil {
					if k == 0 {
						t.Fatal("the change wrote nothing")
					}
					break
				}
				if !errors.Is(err, errCrash) {
					t.Fatal(err)
				}
				check(fmt.Sprintf("crashed after %d writes", k))
				w.failAfter = -1
				r.Ctl = Type.New() // a restarted daemon
				if err := r.Update(after); err != nil {
					t.Fatal(err)
				}
				check(fmt.Sprintf("restarted after %d writes", k))
				if res := r.Run("up", frames[2].frame); res.Verdict != h.sent || res.Port != sB {
					t.Errorf("restarted after %d writes: b's frame: verdict %d port %d, want sent out of %d", k, res.Verdict, res.Port, sB)
				}
			}
		})
	}
}

// A change of one slice replaces or deletes its own HTB class on the
// egress interface, whatever the slicer holds; a restarted controller
// writes the tree whole once.
func TestE2EOneSliceChangeReplacesItsClass(t *testing.T) {
	lab := netlab.NewT(t)
	h, err := lab.Host("h")
	if err != nil {
		t.Fatal(err)
	}
	iface, err := lab.Veth(h, "eth0", "ve", "198.18.0.1/24")
	if err != nil {
		t.Fatal(err)
	}
	var replaced []uint32
	classReplace = func(c netlink.Class) error {
		replaced = append(replaced, c.Attrs().Handle)
		return netlink.ClassReplace(c)
	}
	t.Cleanup(func() { classReplace = netlink.ClassReplace })
	set := Settings{Uplink: "up", Egress: []Egress{{Interface: iface, RateBps: 100e6}}}
	var list []Slice
	for k := 1; k <= 40; k++ {
		s := chainSlice(k)
		s.MinBps = 1e6
		list = append(list, s)
	}
	list = slices.Clip(list) // each step appends its own
	r := nftest.New(t, Type, model(datapath.TC, set, list...))
	s41 := chainSlice(41)
	s41.MinBps = 2e6
	faster := s41
	faster.MinBps = 3e6
	h41 := netlink.MakeHandle(QdiscMajor, uint16(classSlice0+41))
	for _, step := range []struct {
		what    string
		ctl     cube.Controller // a new controller (a restarted daemon), or nil
		list    []Slice
		want    []uint32 // the classes replaced
		present bool     // slice 41's class
	}{
		{"one slice more", nil, append(list, s41), []uint32{h41}, true},
		{"its minimum raised", nil, append(list, faster), []uint32{h41}, true},
		{"it deleted", nil, list, nil, false},
		{"the same slices, by a restarted controller", Type.New(), list, nil, false},
	} {
		if step.ctl != nil {
			r.Ctl = step.ctl
		}
		replaced = nil
		if err := r.Update(model(datapath.TC, set, step.list...)); err != nil {
			t.Fatal(err)
		}
		if step.ctl != nil {
			if len(replaced) != 1+9+len(step.list) { // the link, best effort, the bands, the slices
				t.Errorf("%s: %d classes replaced, want all %d", step.what, len(replaced), 1+9+len(step.list))
			}
		} else if !slices.Equal(replaced, step.want) {
			t.Errorf("%s: classes replaced %x, want %x", step.what, replaced, step.want)
		}
		cs, err := classStats(iface)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cs[uint16(classSlice0+41)]; ok != step.present {
			t.Errorf("%s: slice 41's class there: %v, want %v", step.what, ok, step.present)
		}
		if len(cs) != 1+9+len(step.list) {
			t.Errorf("%s: %d classes on %s, want %d", step.what, len(cs), iface, 1+9+len(step.list))
		}
	}
}
