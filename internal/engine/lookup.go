package engine

// Reading the applied state: one cube, its entries, the whole topology, each
// as who asks may see it.

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Every operation on one cube takes who asks: a cube its actor does not
// own is answered as if it did not exist, checked under the engine's lock
// (the cube cannot change hands between the check and the operation).

// owned returns a cube of the applied state if who owns it.
func (e *Engine) owned(who tenant.Actor, name string) (*cube.Cube, bool) {
	c := e.topo.Lookup(name)
	return c, c != nil && who.Owns(c)
}

// live returns a loaded cube if who owns it.
func (e *Engine) live(who tenant.Actor, name string) (*live, error) {
	l, ok := e.cubes[name]
	if !ok || !who.Owns(e.topo.Lookup(name)) {
		return nil, noCube(name)
	}
	return l, nil
}

// running returns a loaded cube who owns whose program runs (not down).
func (e *Engine) running(who tenant.Actor, name string) (*live, error) {
	l, err := e.live(who, name)
	if err != nil {
		return nil, err
	}
	if l.down != "" {
		return nil, downErr(l)
	}
	return l, nil
}

// Cube returns a copy of one cube of the applied state.
func (e *Engine) Cube(who tenant.Actor, name string) (*cube.Cube, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil, false
	}
	out := c.Clone()
	e.markDown(out)
	return out, true
}

// markDown tells, in a copy of a cube, whether it is down and why.
func (e *Engine) markDown(c *cube.Cube) {
	if l := e.cubes[c.Name]; l != nil {
		c.Down = l.down
	}
}

// CubeHeader returns a copy of one cube of the applied state without its
// table entries: cheap whatever the size of its tables.
func (e *Engine) CubeHeader(who tenant.Actor, name string) (*cube.Cube, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil, false
	}
	h := *c
	h.Tables = nil
	out := h.Clone()
	e.markDown(out)
	return out, true
}

// Entries returns the entries of one table of a cube, ordered by key.
func (e *Engine) Entries(who tenant.Actor, name, table string) []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil
	}
	rows := c.Tables[table]
	out := make([]json.RawMessage, 0, len(rows))
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, rows[k])
	}
	return out
}

// Entry returns one table entry of a cube.
func (e *Engine) Entry(who tenant.Actor, name, table, key string) (json.RawMessage, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.owned(who, name)
	if !ok {
		return nil, false
	}
	raw, ok := c.Tables[table][key]
	return raw, ok
}

// Topology returns a copy of the applied desired state.
func (e *Engine) Topology() *cube.Topology {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.topo.Clone()
	for _, c := range t.Cubes() {
		e.markDown(c)
	}
	return t
}
