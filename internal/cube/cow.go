package cube

import (
	"maps"
	"slices"
)

// Copy-on-write editing. The engine hands a change a working topology
// that shares every cube with the applied one (Share); the change edits it
// only through the accessors below (and the mutations of edit.go, built on
// them), which copy a cube before its first edit and record what they
// touched. The engine then validates, reconciles and journals that set
// (Touched) and nothing else, so a change costs what it changes, not the
// size of the topology.
//
// Cubes read through Lookup, Cube or Cubes are shared with the applied
// state and must not be modified: Edit returns the change's own copy. The
// engine checks this in test builds (a cube of the applied state that
// changed fails the change loudly). The cube map itself is reached only
// through these methods, so no cube is set or removed unrecorded.

// edits is what a topology records of the edits made to it.
type edits struct {
	// shared: the cubes of the topology may be shared with another one
	// (Share); an edit copies them first.
	shared bool
	// own are the cubes this topology holds its own copy of (added, or
	// copied by a first Edit); touched adds the removed ones.
	own     map[string]bool
	touched map[string]bool
	// points are the attachment points whose lists were set or removed.
	points map[string]bool
}

// Fork returns a topology that shares t's cubes and attachment lists (its
// maps its own), shared (Share): a working copy for a change.
func (t *Topology) Fork() *Topology {
	walks.Add(1)
	f := &Topology{cubes: maps.Clone(t.cubes), Attachments: maps.Clone(t.Attachments)}
	f.Share()
	return f
}

// ShareCube makes cube name what from holds (from's cube, shared; none:
// removed) without recording an edit: the engine keeps a working copy in
// step with the applied topology by it.
func (t *Topology) ShareCube(name string, from *Topology) {
	if c := from.cubes[name]; c != nil {
		t.cubes[name] = c
	} else {
		delete(t.cubes, name)
	}
}

// Share marks t's cubes as shared with another topology (the applied
// state): from now on an edit copies a cube before changing it. It forgets
// what was touched before.
func (t *Topology) Share() {
	t.edits = edits{shared: true}
}

// Edit returns cube name for changing: the topology's own copy, made on
// the first edit of a shared cube.
func (t *Topology) Edit(name string) (*Cube, error) {
	c, ok := t.cubes[name]
	if !ok {
		return nil, NotFound("cube", "no cube named %q", name)
	}
	if t.edits.shared && !t.edits.own[name] {
		c = c.Clone()
		t.cubes[name] = c
	}
	t.note(name)
	return c, nil
}

// Put adds c, or replaces the cube of its name, as it is (no peering back:
// AddCube does that). c becomes the topology's own.
func (t *Topology) Put(c *Cube) {
	if t.cubes == nil {
		t.cubes = map[string]*Cube{}
	}
	t.cubes[c.Name] = c
	t.note(c.Name)
}

// Remove drops a cube as it is (DeleteCube also unpeers and detaches it).
func (t *Topology) Remove(name string) {
	delete(t.cubes, name)
	t.note(name)
	delete(t.edits.own, name)
}

// SetAttachments sets the transparent cubes on a point (none: removes it).
func (t *Topology) SetAttachments(point string, list []string) {
	if len(list) == 0 {
		delete(t.Attachments, point)
	} else {
		t.Attachments[point] = list
	}
	if t.edits.points == nil {
		t.edits.points = map[string]bool{}
	}
	t.edits.points[point] = true
}

func (t *Topology) note(name string) {
	if t.edits.own == nil {
		t.edits.own, t.edits.touched = map[string]bool{}, map[string]bool{}
	}
	t.edits.own[name] = true
	t.edits.touched[name] = true
}

// Touched lists, in order, the cubes edited, put or removed since Share,
// and the attachment points set; a touched cube may have ended as it was.
func (t *Topology) Touched() (cubes, points []string) {
	for name := range t.edits.touched {
		cubes = append(cubes, name)
	}
	for p := range t.edits.points {
		points = append(points, p)
	}
	slices.Sort(cubes)
	slices.Sort(points)
	return cubes, points
}

// ChangedAmong is ChangedSince for a caller that knows which cubes may
// have changed (Touched): only they are compared.
func (t *Topology) ChangedAmong(prev *Topology, names []string) []string {
	var out []string
	for _, name := range names {
		c, old := t.cubes[name], prev.cubes[name]
		switch {
		case c == nil && old == nil:
		case c == nil || old == nil || (c != old && (!old.Equal(c) || !old.SameRuntime(c))):
			out = append(out, name)
		}
	}
	return out
}
