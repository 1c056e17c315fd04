package engine

// The index of the applied topology: which cube port each interface is
// peered with, and what each tenant holds (cubes, ports, attachments,
// table entries, kernel memory). Requests and each change's quota check
// read it instead of walking the topology, so they cost the same at 3,000
// cubes as at 10. It is counted once (at start, after a declarative
// apply) and then kept up to date from each change's dirty set (the cubes
// and attachment points it changed) and each change of entries in place.
//
// Everything but kernel memory is counted eagerly: it is read off the
// cube. Kernel memory is priced (a cube's object hashed, its maps sized)
// only once a tenant's quota is checked or its usage shown, then kept for
// each changed cube like the rest.
//
// The index has a lock of its own: the API reads it inside a change
// (UpdateAs's fn, the engine's lock held), where it describes the applied
// state the change starts from. Only the engine, its lock held, writes it.

import (
	"maps"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// holding is what one cube of the applied topology counts for its tenant.
type holding struct {
	tenant         string
	ports, entries int64
	// memory is the cube's kernel memory once priced (a tenant's cube;
	// the administrator's have no quota and are not priced); memErr is
	// why it could not be known: its tenant's checks fail with it, as a
	// count would.
	memory int64
	memErr error
}

// topoIndex indexes the applied topology.
type topoIndex struct {
	mu sync.RWMutex
	// peers maps an interface to the cube port peered with it
	// ("cube:port"; the engine lets one port have an interface).
	peers map[string]string
	// shapers maps an interface to the cube shaping its egress
	// (cube.ShapedBy; validation refuses a second).
	shapers map[string]string
	// cubes is every cube's holding; attached counts the attachment
	// lists each name is in (a cube's places count for its tenant).
	cubes    map[string]holding
	attached map[string]int64
	// by is each tenant's holdings ("": the administrator's), its kernel
	// memory counted only when priced.
	by map[string]tenant.Usage
	// priced: the tenants' cubes' kernel memory is in their holdings;
	// bad are, by tenant, its cubes whose memory is unknown.
	priced bool
	bad    map[string]map[string]error
}

// holdingOf counts cube c, its memory priced if price (the
// administrator's never).
func (e *Engine) holdingOf(c *cube.Cube, price bool) holding {
	h := holding{tenant: c.Tenant, ports: int64(len(c.Ports))}
	for _, rows := range c.Tables {
		h.entries += int64(len(rows))
	}
	if price && c.Tenant != "" {
		e.tenants.priced++
		if m, err := e.cubeMemory(c); err != nil {
			h.memErr = cube.Within("cubes."+c.Name, err)
		} else {
			h.memory = m
		}
	}
	return h
}

// rebuildIndex counts t afresh, its kernel memory not priced.
func (e *Engine) rebuildIndex(t *cube.Topology) {
	x := &e.index
	x.mu.Lock()
	defer x.mu.Unlock()
	x.peers, x.shapers, x.cubes, x.attached = map[string]string{}, map[string]string{}, map[string]holding{}, map[string]int64{}
	x.by, x.bad, x.priced = map[string]tenant.Usage{}, map[string]map[string]error{}, false
	for _, list := range t.Attachments {
		x.attach(list, 1)
	}
	for name, c := range t.Cubes() {
		x.put(name, c, e.holdingOf(c, false))
	}
}

// price counts the kernel memory of every tenant's cube into the
// holdings, if it is not counted yet; the engine's lock is held.
func (e *Engine) price() {
	x := &e.index
	if x.priced {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for name, h := range x.cubes {
		if h.tenant == "" {
			continue
		}
		x.put(name, nil, e.holdingOf(e.topo.Lookup(name), true))
	}
	x.priced = true
}

// noteIndex brings the index from prev to next, which differ in cs's
// cubes and points (all: anything may; counted afresh).
func (e *Engine) noteIndex(prev, next *cube.Topology, cs *changeSet, all bool) {
	x := &e.index
	if all || x.cubes == nil {
		e.rebuildIndex(next)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	// The lists first: a changed cube then leaves its tenant with the
	// places it has now, and comes back to its (new) tenant with them.
	for _, point := range cs.points {
		x.attach(prev.Attachments[point], -1)
		x.attach(next.Attachments[point], 1)
	}
	for name := range cs.changed {
		x.drop(name, prev.Lookup(name))
	}
	for name := range cs.changed {
		if c := next.Lookup(name); c != nil {
			x.put(name, c, e.holdingOf(c, x.priced))
		}
	}
}

// of is the holdings of tenant name, to change (x.mu held for writing).
func (x *topoIndex) of(name string) tenant.Usage {
	use := x.by[name]
	if use == nil {
		use = zeroUsage()
		x.by[name] = use
	}
	return use
}

// zeroUsage holds nothing, every quota named (as tenant.Count answers).
func zeroUsage() tenant.Usage {
	return tenant.Usage{tenant.Cubes: 0, tenant.Ports: 0, tenant.Attachments: 0, tenant.TableEntries: 0, tenant.KernelMemory: 0}
}

// put counts cube name as holding h, replacing what it held (its
// attachments move with it to its tenant); c, if not nil, is the cube,
// whose ports peered with interfaces are indexed.
func (x *topoIndex) put(name string, c *cube.Cube, h holding) {
	if old, ok := x.cubes[name]; ok {
		add(x.of(old.tenant), old, x.attached[name], -1)
		delete(x.bad[old.tenant], name)
	}
	x.cubes[name] = h
	add(x.of(h.tenant), h, x.attached[name], 1)
	if h.memErr != nil {
		if x.bad[h.tenant] == nil {
			x.bad[h.tenant] = map[string]error{}
		}
		x.bad[h.tenant][name] = h.memErr
	}
	if c == nil {
		return
	}
	for _, p := range c.Ports {
		if ep, err := cube.ParseEndpoint(p.Peer); err == nil && !ep.IsCube() {
			x.peers[ep.Iface] = name + ":" + p.Name
		}
	}
	for _, iface := range cube.ShapedBy(c) {
		x.shapers[iface] = name
	}
}

// drop stops counting cube name, which was c (nil: it was none).
func (x *topoIndex) drop(name string, c *cube.Cube) {
	h, ok := x.cubes[name]
	if !ok {
		return
	}
	add(x.of(h.tenant), h, x.attached[name], -1)
	delete(x.cubes, name)
	delete(x.bad[h.tenant], name)
	if c == nil {
		return
	}
	for _, p := range c.Ports {
		if ep, err := cube.ParseEndpoint(p.Peer); err == nil && !ep.IsCube() && x.peers[ep.Iface] == name+":"+p.Name {
			delete(x.peers, ep.Iface)
		}
	}
	for _, iface := range cube.ShapedBy(c) {
		if x.shapers[iface] == name {
			delete(x.shapers, iface)
		}
	}
}

// attach counts the names of an attachment list sign times more.
func (x *topoIndex) attach(list []string, sign int64) {
	for _, name := range list {
		if x.attached[name] += sign; x.attached[name] == 0 {
			delete(x.attached, name)
		}
		if h, ok := x.cubes[name]; ok {
			x.of(h.tenant)[tenant.Attachments] += sign
		}
	}
}

// entries counts n more table entries of cube name (a change of its
// entries in place: entries.go).
func (x *topoIndex) entries(name string, n int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if h, ok := x.cubes[name]; ok {
		h.entries += n
		x.cubes[name] = h
		x.of(h.tenant)[tenant.TableEntries] += n
	}
}

func add(use tenant.Usage, h holding, attached, sign int64) {
	use[tenant.Cubes] += sign
	use[tenant.Ports] += sign * h.ports
	use[tenant.TableEntries] += sign * h.entries
	use[tenant.KernelMemory] += sign * h.memory
	use[tenant.Attachments] += sign * attached
}

// usage is what tenant name holds in the applied topology, a copy; with
// memory, its kernel memory is priced, and a cube whose memory is unknown
// is the error.
func (e *Engine) usage(name string, memory bool) (tenant.Usage, error) {
	if memory {
		e.price()
	}
	x := &e.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	if memory {
		for _, err := range x.bad[name] {
			return nil, err
		}
	}
	use := zeroUsage()
	maps.Copy(use, x.by[name])
	return use, nil
}

// usageChange is tenant name's holdings in the applied topology and in
// next, which differs from it in d (what tenant.Count would count in
// each).
func (e *Engine) usageChange(name string, next *cube.Topology, d dirty) (prev, now tenant.Usage, err error) {
	if d.all || name == "" {
		if prev, err = tenant.Count(e.topo, name, e.cubeMemory); err != nil {
			return nil, nil, err
		}
		now, err = tenant.Count(next, name, e.cubeMemory)
		return prev, now, err
	}
	if prev, err = e.usage(name, true); err != nil {
		return nil, nil, err
	}
	now = maps.Clone(prev)
	x := &e.index // only the engine writes it, and its lock is held
	// attachments: the lists the change altered, as they were and are
	for _, point := range d.points {
		for _, n := range e.topo.Attachments[point] {
			if h, ok := x.cubes[n]; ok && h.tenant == name {
				now[tenant.Attachments]--
			}
		}
		for _, n := range next.Attachments[point] {
			if c := next.Lookup(n); c != nil && c.Tenant == name {
				now[tenant.Attachments]++
			}
		}
	}
	for _, n := range d.cubes {
		// a changed cube's attachments at points the change kept count
		// for its tenant before and after (those at altered points are
		// counted above, for the cube as it was and is)
		kept := x.attached[n]
		for _, point := range d.points {
			for _, m := range e.topo.Attachments[point] {
				if m == n {
					kept--
				}
			}
		}
		if h, ok := x.cubes[n]; ok && h.tenant == name {
			add(now, h, kept, -1)
		}
		if c := next.Lookup(n); c != nil && c.Tenant == name {
			h := e.holdingOf(c, true)
			if h.memErr != nil {
				return nil, nil, h.memErr
			}
			add(now, h, kept, 1)
		}
	}
	return prev, now, nil
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

// ShaperOf returns the cube shaping a Linux interface's egress in the
// applied topology, if any; inside a change, in the state it started from.
func (e *Engine) ShaperOf(iface string) (string, bool) {
	x := &e.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	name, ok := x.shapers[iface]
	return name, ok
}

// Holds returns what a tenant ("": the administrator) holds in the
// applied topology: its cubes and its cubes' places in attachment lists
// (tenant.Count's Cubes and Attachments). Inside a change (UpdateAs's fn)
// it answers for the state the change started from.
func (e *Engine) Holds(tenantName string) (cubes, attachments int) {
	x := &e.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	use := x.by[tenantName]
	return int(use[tenant.Cubes]), int(use[tenant.Attachments])
}
