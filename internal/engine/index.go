package engine

// Indexes of the applied topology that requests read without walking it:
// which cube port each interface is peered with, and what each tenant
// holds in cubes and attachments. They are counted once (at start, after a
// declarative apply) and then kept up to date from each change's dirty
// set (the cubes and attachment points it changed), so a request that asks
// costs the same at 3,000 cubes as at 10. They have a lock of their own:
// the API reads them inside a change (UpdateAs's fn, the engine's lock
// held), where they describe the applied state the change starts from.

import (
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
)

// topoIndex indexes the applied topology.
type topoIndex struct {
	mu sync.RWMutex
	// peers maps an interface to the cube port peered with it
	// ("cube:port"; the engine lets one port have an interface).
	peers map[string]string
	// cubes counts each tenant's cubes ("": the administrator's).
	cubes map[string]int
	// attached counts the attachment lists each name is in, and
	// attachments each tenant's cubes' places in them (what
	// tenant.Count counts as Attachments).
	attached    map[string]int
	attachments map[string]int
}

// rebuild counts t afresh.
func (x *topoIndex) rebuild(t *cube.Topology) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.peers, x.cubes, x.attached, x.attachments = map[string]string{}, map[string]int{}, map[string]int{}, map[string]int{}
	for name, c := range t.Cubes() {
		x.add(name, c, 1)
	}
	for _, list := range t.Attachments {
		x.attach(t, list, nil, 1)
	}
	for name, n := range x.attached {
		if c := t.Lookup(name); c != nil {
			x.attachments[c.Tenant] += n
		}
	}
}

// add counts cube c (named name) sign times: its tenant's cube and its
// peered interfaces.
func (x *topoIndex) add(name string, c *cube.Cube, sign int) {
	if c == nil {
		return
	}
	bump(x.cubes, c.Tenant, sign)
	for _, p := range c.Ports {
		if ep, err := cube.ParseEndpoint(p.Peer); err == nil && !ep.IsCube() {
			if sign > 0 {
				x.peers[ep.Iface] = name + ":" + p.Name
			} else if x.peers[ep.Iface] == name+":"+p.Name {
				delete(x.peers, ep.Iface)
			}
		}
	}
}

// attach counts an attachment list of t sign times; the places of cubes
// not in skip count for their tenants (skip's are counted whole by note).
func (x *topoIndex) attach(t *cube.Topology, list []string, skip map[string]bool, sign int) {
	for _, name := range list {
		bump(x.attached, name, sign)
		if skip == nil || skip[name] {
			continue
		}
		if c := t.Lookup(name); c != nil {
			bump(x.attachments, c.Tenant, sign)
		}
	}
}

func bump(m map[string]int, k string, n int) {
	if m[k] += n; m[k] == 0 {
		delete(m, k)
	}
}

// note brings the index from prev to next, which differ in cs's cubes and
// points (all: anything may; counted afresh).
func (x *topoIndex) note(prev, next *cube.Topology, cs *changeSet, all bool) {
	if all || x.peers == nil {
		x.rebuild(next)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	// A changed cube leaves with what it was and comes back with what it
	// is: its tenant's cube, places and interfaces.
	for name := range cs.changed {
		if c := prev.Lookup(name); c != nil {
			x.add(name, c, -1)
			bump(x.attachments, c.Tenant, -x.attached[name])
		}
	}
	for _, point := range cs.points {
		x.attach(prev, prev.Attachments[point], cs.changed, -1)
		x.attach(next, next.Attachments[point], cs.changed, 1)
	}
	for name := range cs.changed {
		if c := next.Lookup(name); c != nil {
			x.add(name, c, 1)
			bump(x.attachments, c.Tenant, x.attached[name])
		}
	}
}

// PeerOf returns the cube port ("cube:port") peered with a Linux
// interface in the applied topology, if any. Inside a change (UpdateAs's
// fn) it answers for the state the change started from.
func (e *Engine) PeerOf(iface string) (string, bool) {
	x := &e.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	p, ok := x.peers[iface]
	return p, ok
}

// Holds returns what a tenant ("": the administrator) holds in the
// applied topology: its cubes and its cubes' places in attachment lists
// (tenant.Count's Cubes and Attachments). Inside a change (UpdateAs's fn)
// it answers for the state the change started from.
func (e *Engine) Holds(tenantName string) (cubes, attachments int) {
	x := &e.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.cubes[tenantName], x.attachments[tenantName]
}
