package engine

// A change's working copy. It is a topology that shares every cube with
// the applied one (copy-on-write: cube.Topology.Edit copies a cube before
// its first edit) and records what the change touched. The engine keeps
// it from one change to the next (the spare copy): taking it, putting
// back what an aborted change touched, or bringing it up to date after an
// applied one costs what the change touched, not the size of the topology.

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
)

// dirty is what a change touched: the cubes that differ from the applied
// ones and the candidate attachment points (all: the change's topology
// is not a working copy, a declarative apply's).
type dirty struct {
	cubes  []string
	points []string
	all    bool
	// rows are the entries that differ, of the changed cubes that differ
	// in nothing else (as far as dirtyOf found them).
	rows map[string][]cube.Row
}

// rowsOf lists the entries that differ between old and c, cube name as
// applied and as changed.
func (d dirty) rowsOf(name string, old, c *cube.Cube) []cube.Row {
	if rows, ok := d.rows[name]; ok {
		return rows
	}
	return cube.ChangedRows(old, c)
}

// entriesOnly reports whether old and c, two versions of a cube, may
// differ in their entries alone.
func entriesOnly(old, c *cube.Cube) bool {
	return old != nil && c != nil && old.Type == c.Type && cube.SameButTables(old, c) && old.SameRuntime(c)
}

// workingCopy is the topology a change works on: the applied one, sharing
// its cubes, its attachment lists copied (each list shared).
func (e *Engine) workingCopy() *cube.Topology {
	if e.checkEdits {
		e.refreshWitness()
	}
	t := e.spare
	e.spare = nil
	if t == nil {
		return e.topo.Fork()
	}
	t.Share()
	return t
}

// dirtyOf finds what a working copy changed: the touched cubes that differ
// from the applied ones, the touched attachment points whose lists differ.
// A touched cube that ended as it was is shared again (the working copy
// then shares every cube it did not change).
func (e *Engine) dirtyOf(next *cube.Topology) dirty {
	if e.checkEdits {
		e.checkWorkingCopy(next)
	}
	cubes, points := next.Touched()
	// A cube whose entries alone changed is read once, for the entries
	// that did (a slice added to a slicer of 1,000): the rest of the
	// change works from them.
	d := dirty{rows: map[string][]cube.Row{}}
	var others []string
	for _, name := range cubes {
		old, c := e.topo.Lookup(name), next.Lookup(name)
		if old == c || !entriesOnly(old, c) {
			others = append(others, name)
			continue
		}
		rows := cube.ChangedRows(old, c)
		if e.checkEdits && !slices.Equal(rows, cube.ScanRows(old, c)) {
			e.mu.Unlock()
			panic(fmt.Sprintf("engine: cube %q: the entries recorded as set miss some that changed: an entry of a working copy must be set through cube.Cube.SetRow", name))
		}
		if len(rows) > 0 {
			d.cubes, d.rows[name] = append(d.cubes, name), rows
		}
	}
	d.cubes = append(d.cubes, next.ChangedAmong(e.topo, others)...)
	slices.Sort(d.cubes)
	for _, name := range cubes {
		if _, changed := slices.BinarySearch(d.cubes, name); !changed {
			next.ShareCube(name, e.topo)
		}
	}
	for _, p := range points {
		if !slices.Equal(next.Attachments[p], e.topo.Attachments[p]) {
			d.points = append(d.points, p)
		}
	}
	return d
}

// dirtyAll is dirtyOf for a topology that is not a working copy (a
// declarative apply's): every cube is compared.
func (e *Engine) dirtyAll(next *cube.Topology) dirty {
	return dirty{cubes: next.ChangedSince(e.topo), all: true}
}

// recycle makes a working copy a change did not apply the spare copy
// again, by putting back what the change touched in it.
func (e *Engine) recycle(t *cube.Topology) {
	cubes, points := t.Touched()
	for _, name := range cubes {
		t.ShareCube(name, e.topo)
	}
	for _, p := range points {
		if list, ok := e.topo.Attachments[p]; ok {
			t.Attachments[p] = list
		} else {
			delete(t.Attachments, p)
		}
	}
	t.Share()
	e.spare = t
}

// keepSpare makes prev, the topology a change replaced by next, the spare
// copy, by taking from next what the change altered (next shares the
// rest with prev). After a declarative apply, next shares nothing with
// prev: the next change copies the applied cube map afresh.
func (e *Engine) keepSpare(prev, next *cube.Topology, cs *changeSet, all bool) {
	if all {
		e.spare = nil
		return
	}
	for name := range cs.changed {
		prev.ShareCube(name, next)
	}
	for _, point := range cs.points {
		if list, ok := next.Attachments[point]; ok {
			prev.Attachments[point] = list
		} else {
			delete(prev.Attachments, point)
		}
	}
	prev.Share()
	e.spare = prev
}

// changedInPlace notes a cube of the applied topology the engine changed
// in place (an entry change, entries.go): the spare copy shares it, so
// only the edit check's witness takes it again.
func (e *Engine) changedInPlace(name string) {
	if e.checkEdits {
		e.witnessStale[name] = true
	}
}

// checkEditsOn says whether the engine checks that changes edit their
// working copy only through the copy-on-write accessors: in tests (and
// daemons started with EDGENF_CHECK_EDITS=1), unless EDGENF_CHECK_EDITS=0
// (benchmarks: the check visits every cube).
func checkEditsOn() bool {
	switch os.Getenv("EDGENF_CHECK_EDITS") {
	case "0":
		return false
	case "1":
		return true
	}
	return testing.Testing()
}

// refreshWitness brings the witness, a deep copy of the applied cubes, up
// to date with the applied state.
func (e *Engine) refreshWitness() {
	if e.witness == nil {
		e.witness = make(map[string]*cube.Cube, e.topo.NumCubes())
		for name, c := range e.topo.Cubes() {
			e.witness[name] = c.Clone()
		}
		clear(e.witnessStale)
		return
	}
	for name := range e.witnessStale {
		if c := e.topo.Lookup(name); c != nil {
			e.witness[name] = c.Clone()
		} else {
			delete(e.witness, name)
		}
	}
	clear(e.witnessStale)
}

// checkWorkingCopy fails loudly on a change that went around the
// accessors: a cube of the applied state (shared with the working copy,
// read through Lookup or Cubes) changed in place, an attachment list set
// in next.Attachments directly. The applied state would then differ from
// the kernel's and the state file's without anyone knowing. (A cube cannot
// be set or removed around them: the topology's cube map is its own.)
func (e *Engine) checkWorkingCopy(next *cube.Topology) {
	fail := func(format string, args ...any) {
		e.mu.Unlock()
		panic(fmt.Sprintf("engine: "+format+": a change must edit cubes through cube.Topology.Edit, Put, Remove (or the mutations built on them) and attachments through SetAttachments", args...))
	}
	for name, c := range e.topo.Cubes() {
		if w := e.witness[name]; w == nil || !c.Equal(w) || !c.SameRuntime(w) {
			fail("cube %q of the applied state was changed in place", name)
		}
	}
	_, points := next.Touched()
	for _, t := range []*cube.Topology{next, e.topo} {
		for p := range t.Attachments {
			if !slices.Contains(points, p) && !slices.Equal(next.Attachments[p], e.topo.Attachments[p]) {
				fail("the attachments of %q were set directly", p)
			}
		}
	}
}

// witnessChanged takes the cubes a change applied into the witness.
func (e *Engine) witnessChanged(cs *changeSet, all bool) {
	if !e.checkEdits {
		return
	}
	if all {
		e.witness = nil
		return
	}
	for name := range cs.changed {
		e.witnessStale[name] = true
	}
}
