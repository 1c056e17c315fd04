package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/state"
)

// chain is a two-cube portfwd chain named c<i>a and c<i>b.
func chain(i int) []*cube.Cube {
	a, b := fmt.Sprintf("c%da", i), fmt.Sprintf("c%db", i)
	rules := map[string]map[string]json.RawMessage{"rules": {
		"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`),
	}}
	return []*cube.Cube{
		{Name: a, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1, Peer: b + ":p0"}}, Tables: rules},
		{Name: b, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0, Peer: a + ":p1"}, {Name: "p1", Index: 1}}},
	}
}

// journalCubes lists the cubes and attachment points the journal holds
// records of, in order, and the snapshot generation it belongs to.
func journalCubes(t *testing.T, e *Engine) []string {
	t.Helper()
	b, err := os.ReadFile(state.JournalPath(e.cfg.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r state.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Kind+":"+r.Cube+r.Key)
	}
	return out
}

// TestChangeTouchesOnlyItsDirtySet: in a topology of many chains, a change
// reconciles, plans and journals the cubes it changes and their peers,
// nothing else, and the state file is not rewritten; what it journalled
// restores the same topology; the working copy a change starts from is the
// applied topology (sharing its cubes), also after a refused change.
func TestChangeTouchesOnlyItsDirtySet(t *testing.T) {
	e := testEngine(t, "enfdirty")
	if err := e.Update(func(tp *cube.Topology) error {
		for i := range 20 {
			for _, c := range chain(i) {
				tp.Put(c)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(e.cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, fn func(tp *cube.Topology) error, changed, planned, journal []string) {
		t.Helper()
		before := len(journalCubes(t, e))
		if err := e.Update(fn); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		cs := e.lastChange
		if got := sorted(cs.changed); !slices.Equal(got, changed) {
			t.Errorf("%s: changed %v, want %v", what, got, changed)
		}
		if got := sorted(cs.plan); !slices.Equal(got, planned) {
			t.Errorf("%s: planned %v, want %v", what, got, planned)
		}
		if got := journalCubes(t, e)[before:]; !slices.Equal(got, journal) {
			t.Errorf("%s: journalled %v, want %v", what, got, journal)
		}
		// the working copy is the applied topology, sharing its cubes
		e.mu.Lock()
		w := e.workingCopy()
		for name, c := range e.topo.Cubes() {
			if w.Lookup(name) != c {
				t.Errorf("%s: the working copy's %s is not the applied cube", what, name)
			}
		}
		if w.NumCubes() != e.topo.NumCubes() || !maps.EqualFunc(w.Attachments, e.topo.Attachments, slices.Equal) {
			t.Errorf("%s: the working copy has %d cubes and attachments %v; the applied topology %d and %v",
				what, w.NumCubes(), w.Attachments, e.topo.NumCubes(), e.topo.Attachments)
		}
		e.recycle(w)
		e.mu.Unlock()
	}
	step("add a chain", func(tp *cube.Topology) error {
		for _, c := range chain(20) {
			tp.Put(c)
		}
		return nil
	}, []string{"c20a", "c20b"}, []string{"c20a", "c20b"}, []string{"cube:c20a", "cube:c20b"})
	step("unpeer", func(tp *cube.Topology) error { return tp.Unpeer("c3a:p1") },
		[]string{"c3a", "c3b"}, []string{"c3a", "c3b"}, []string{"cube:c3a", "cube:c3b"})
	step("attach", func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "mon", Type: "monitor"}); err != nil {
			return err
		}
		return tp.Attach("mon", "c5a:p1", "last")
	}, []string{"mon"}, []string{"c5a", "c5b", "mon"}, []string{"cube:mon", "attachment:c5a:p1"})
	step("entry", func(tp *cube.Topology) error {
		_, err := tp.PutEntry("c7a", "rules", json.RawMessage(`{"in_port":"p1","out_port":"p0"}`))
		return err
	}, []string{"c7a"}, []string{"c7a", "c7b"}, []string{":c7ap1"}) // the entry, not the cube
	step("delete a chain", func(tp *cube.Topology) error {
		if err := tp.DeleteCube("c9a"); err != nil {
			return err
		}
		return tp.DeleteCube("c9b")
	}, []string{"c9a", "c9b"}, nil, []string{"cube:c9a", "cube:c9b"})
	// a refused change: nothing journalled, the working copy stays right
	if err := e.Update(func(tp *cube.Topology) error {
		c, err := tp.Edit("c1a")
		c.Ports[1].Peer = "nosuch:p0"
		return err
	}); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("a peer with no cube: %v", err)
	}
	step("after a refusal", func(tp *cube.Topology) error { return tp.SetPeer("c3a:p1", "c3b:p0") },
		[]string{"c3a", "c3b"}, []string{"c3a", "c3b"}, []string{"cube:c3a", "cube:c3b"})
	if now, err := os.ReadFile(e.cfg.StateFile); err != nil || string(now) != string(snap) {
		t.Fatalf("the state file was rewritten (%v): changes should only append to the journal", err)
	}

	// What was journalled is the state: loaded, it is the applied topology.
	f, err := state.Load(e.cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	want := e.Topology()
	if f.Topology.NumCubes() != want.NumCubes() || !maps.EqualFunc(f.Topology.Attachments, want.Attachments, slices.Equal) {
		t.Fatalf("loaded %d cubes and attachments %v, want %d and %v", f.Topology.NumCubes(), f.Topology.Attachments, want.NumCubes(), want.Attachments)
	}
	for name, c := range want.Cubes() {
		if got := f.Topology.Lookup(name); got == nil || !got.Equal(c) {
			t.Errorf("cube %s loaded as %+v, want %+v", name, got, c)
		}
		if f.Slots[name] != e.slots[name] {
			t.Errorf("cube %s loaded in slot %d, runs in %d", name, f.Slots[name], e.slots[name])
		}
	}
	// and a restarted engine comes up with it (replaying the journal)
	cfg := e.cfg
	e.Close()
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	r, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Destroy()
	if got := r.Topology(); got.NumCubes() != want.NumCubes() || !got.Lookup("c20a").Equal(want.Lookup("c20a")) || got.Lookup("c9a") != nil ||
		!slices.Equal(got.Attachments["c5a:p1"], []string{"mon"}) {
		t.Fatalf("restarted with %d cubes, attachments %v", got.NumCubes(), got.Attachments)
	}
}

// TestCheckpointFoldsTheJournal: after a clean stop's checkpoint the state
// file alone holds the changes the journal had, and the journal is empty.
func TestCheckpointFoldsTheJournal(t *testing.T) {
	e := testEngine(t, "enfckpt")
	if err := e.Update(func(tp *cube.Topology) error {
		for _, c := range chain(0) {
			tp.Put(c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(journalCubes(t, e)) == 0 {
		t.Fatal("the change was not journalled")
	}
	if err := e.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := journalCubes(t, e); len(got) != 0 {
		t.Fatalf("the journal still holds %v", got)
	}
	b, err := os.ReadFile(e.cfg.StateFile)
	if err != nil || !strings.Contains(string(b), `"c0a"`) || !strings.Contains(string(b), `"c0b"`) {
		t.Fatalf("the state file lacks the chain (%v):\n%s", err, b)
	}
}
