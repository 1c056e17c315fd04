package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/state"
)

// failingConfig makes the failing NF type's controller refuse to sync.
type failingConfig struct {
	Fail bool `json:"fail"`
}

type failingController struct{ cube.Controller }

func (f failingController) Sync(h cube.Handle, c *cube.Cube) error {
	var cfg failingConfig
	if json.Unmarshal(c.Config, &cfg) == nil && cfg.Fail {
		return errors.New("engine-test-failing: refused on purpose")
	}
	return nil
}

func init() {
	cube.Register(&cube.Type{
		Name: "engine-test-failing", Description: "portfwd's program, whose controller refuses to sync when its settings say so",
		Hooks: []datapath.Hook{datapath.XDP}, Object: portfwd.Type.Object, Config: &failingConfig{},
		New: func() cube.Controller { return failingController{portfwd.Type.New()} },
	})
}

// liveState is what the engine holds of one cube, to tell whether a
// change touched it: the model it applied (shared with the working copy),
// the loaded cube, its program, the model it last synced, its hops.
type liveState struct {
	model *cube.Cube
	l     *live
	dc    *datapath.Program
	c     *cube.Cube
	hops  map[int]datapath.Hop
}

func liveStates(e *Engine) map[string]liveState {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]liveState{}
	for name, c := range e.topo.Cubes() {
		l := e.cubes[name]
		out[name] = liveState{model: c, l: l, dc: l.dc, c: l.c, hops: maps.Clone(l.hops)}
	}
	return out
}

// chains builds n two-cube chains (c<i>a, c<i>b) in one change.
func chains(t *testing.T, e *Engine, n int, more ...*cube.Cube) {
	t.Helper()
	if err := e.Update(func(tp *cube.Topology) error {
		for i := range n {
			for _, c := range chain(i) {
				tp.Put(c)
			}
		}
		for _, c := range more {
			tp.Put(c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestChangeLeavesOtherCubesUntouched: a change to one cube (an entry, a
// peering) leaves every other cube's model shared, not copied, and its
// loaded program, synced model and hops as they were; the changed cube's
// peer gets new hops but is not synced again.
func TestChangeLeavesOtherCubesUntouched(t *testing.T) {
	e := testEngine(t, "enfcowone")
	chains(t, e, 10)
	before := liveStates(e)
	steps := []struct {
		what    string
		fn      func(tp *cube.Topology) error
		synced  []string // cubes synced again
		rehoped []string // cubes whose hops change
	}{
		{"an entry of c3a", func(tp *cube.Topology) error {
			_, err := tp.PutEntry("c3a", "rules", json.RawMessage(`{"in_port":"p1","out_port":"p0"}`))
			return err
		}, []string{"c3a"}, nil},
		{"c5a unpeered from c5b", func(tp *cube.Topology) error { return tp.Unpeer("c5a:p1") },
			[]string{"c5a", "c5b"}, []string{"c5a", "c5b"}},
	}
	for _, s := range steps {
		if err := e.Update(s.fn); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		after := liveStates(e)
		for name, b := range before {
			a := after[name]
			if a.l != b.l || a.dc != b.dc {
				t.Errorf("%s: cube %s was loaded again", s.what, name)
			}
			synced := a.c != b.c || a.model != b.model
			if want := slices.Contains(s.synced, name); synced != want {
				t.Errorf("%s: cube %s synced again: %v, want %v", s.what, name, synced, want)
			}
			rehoped := !maps.Equal(a.hops, b.hops)
			if want := slices.Contains(s.rehoped, name); rehoped != want {
				t.Errorf("%s: cube %s has other hops: %v, want %v", s.what, name, rehoped, want)
			}
		}
		before = after
	}
}

// TestAbortedChangeLeavesStateUnchanged: a change refused by its caller,
// by validation, or by the kernel side half-way through the reconcile
// leaves the applied topology (the same cube values), the kernel's
// objects and hops, the state file and the journal as they were; the next
// change starts from the applied state and goes through.
func TestAbortedChangeLeavesStateUnchanged(t *testing.T) {
	e := testEngine(t, "enfcowabort")
	chains(t, e, 3, &cube.Cube{Name: "f", Type: "engine-test-failing", Ports: []cube.Port{{Name: "p0", Index: 0}}})
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	snap, journal := read(e.cfg.StateFile), read(state.JournalPath(e.cfg.StateFile))
	before := liveStates(e)
	rev := e.Revision()
	aborts := []struct {
		what string
		fn   func(tp *cube.Topology) error
		want string
	}{
		{"the caller's error", func(tp *cube.Topology) error {
			if err := tp.Unpeer("c0a:p1"); err != nil {
				return err
			}
			if _, err := tp.PutEntry("c1a", "rules", json.RawMessage(`{"in_port":"p1","out_port":"p0"}`)); err != nil {
				return err
			}
			return errors.New("changed my mind")
		}, "changed my mind"},
		{"a validation refusal", func(tp *cube.Topology) error {
			if err := tp.DeleteCube("c2b"); err != nil {
				return err
			}
			c, err := tp.Edit("c1a")
			c.Ports[1].Peer = "nosuch:p0"
			return err
		}, "nosuch"},
		{"a refusal half-way through the reconcile", func(tp *cube.Topology) error {
			if err := tp.Unpeer("c0a:p1"); err != nil {
				return err
			}
			if err := tp.AddCube(&cube.Cube{Name: "n", Type: "portfwd"}); err != nil {
				return err
			}
			return tp.SetConfig("f", json.RawMessage(`{"fail":true}`))
		}, "refused on purpose"},
	}
	for _, a := range aborts {
		if err := e.Update(a.fn); err == nil || !strings.Contains(err.Error(), a.want) {
			t.Fatalf("%s: %v, want an error with %q", a.what, err, a.want)
		}
		if e.Revision() != rev {
			t.Errorf("%s: the revision moved", a.what)
		}
		after := liveStates(e)
		if len(after) != len(before) {
			t.Errorf("%s: %d cubes applied, want %d", a.what, len(after), len(before))
		}
		for name, b := range before {
			a2 := after[name]
			if a2.model != b.model || a2.l != b.l || a2.dc != b.dc || !a2.c.Equal(b.c) || !maps.Equal(a2.hops, b.hops) {
				t.Errorf("%s: cube %s is not as it was", a.what, name)
			}
		}
		e.mu.Lock()
		_, loaded := e.cubes["n"]
		_, slotted := e.slots["n"]
		e.mu.Unlock()
		if loaded || slotted {
			t.Errorf("%s: the added cube stayed loaded (%v) or in a slot (%v)", a.what, loaded, slotted)
		}
		if read(e.cfg.StateFile) != snap || read(state.JournalPath(e.cfg.StateFile)) != journal {
			t.Errorf("%s: the state file or the journal changed", a.what)
		}
		// the next change's working copy is the applied state
		e.mu.Lock()
		w := e.workingCopy()
		for name, c := range e.topo.Cubes() {
			if w.Lookup(name) != c {
				t.Errorf("%s: the working copy's %s is not the applied cube", a.what, name)
			}
		}
		if w.NumCubes() != e.topo.NumCubes() || !maps.EqualFunc(w.Attachments, e.topo.Attachments, slices.Equal) {
			t.Errorf("%s: the working copy has %d cubes and attachments %v, the applied state %d and %v", a.what, w.NumCubes(), w.Attachments, e.topo.NumCubes(), e.topo.Attachments)
		}
		e.recycle(w)
		e.mu.Unlock()
	}
	if err := e.Update(func(tp *cube.Topology) error { return tp.Unpeer("c0a:p1") }); err != nil {
		t.Fatal(err)
	}
	if c := e.Topology().Lookup("c0b"); c.Ports[0].Peer != "" {
		t.Fatalf("after the aborted changes, unpeering c0a left c0b peered with %s", c.Ports[0].Peer)
	}
}

// TestEditsAroundTheAccessorsAreCaught: a change that changes a cube of
// the applied state in place, or sets attachments in the working copy's
// map directly, fails loudly (in tests, and in daemons started
// with EDGENF_CHECK_EDITS=1) instead of leaving the kernel, the state file
// and the applied state to disagree.
func TestEditsAroundTheAccessorsAreCaught(t *testing.T) {
	e := testEngine(t, "enfcowcheck")
	chains(t, e, 2)
	cases := []struct {
		what string
		fn   func(tp *cube.Topology) error
		want string
	}{
		{"attachments set directly", func(tp *cube.Topology) error {
			tp.Attachments["c1a:p0"] = []string{"c1b"}
			return nil
		}, `the attachments of "c1a:p0" were set directly`},
		// last: it changes the applied state itself
		{"an applied cube changed in place", func(tp *cube.Topology) error {
			tp.Lookup("c0a").Ports[0].MAC = "02:00:00:00:00:01"
			return nil
		}, `cube "c0a" of the applied state was changed in place`},
	}
	for _, c := range cases {
		got := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			e.Update(c.fn)
			return ""
		}()
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want a panic with %q", c.what, got, c.want)
		}
	}
}
