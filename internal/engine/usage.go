package engine

// Tenants' holdings, kept up to date change by change. A tenant's quota
// check compares what it holds before and after a change (tenant.Check);
// counting that over every cube of a topology of thousands, and pricing
// each cube's kernel memory (its object hashed), made every change cost
// the size of the topology. The engine counts the applied topology once
// (at the first check after start or a declarative apply) and then adds
// what each change alters: its dirty cubes and attachment points.

import (
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// holding is what one cube of the applied topology counts for its tenant.
type holding struct {
	tenant                 string
	ports, entries, memory int64
	// memErr is why the cube's kernel memory could not be known: its
	// tenant's checks fail with it, as a count would.
	memErr error
}

// usageIndex is every tenant's holdings in the applied topology.
type usageIndex struct {
	cubes map[string]holding
	// attached counts the attachment lists each name is in.
	attached map[string]int64
	by       map[string]tenant.Usage
	// bad are the cubes of each tenant whose memory is unknown.
	bad map[string]map[string]error
}

// holdingOf counts cube c (the administrator's cubes have no quota: their
// memory is not priced).
func (e *Engine) holdingOf(c *cube.Cube) holding {
	e.tenants.counted++
	h := holding{tenant: c.Tenant, ports: int64(len(c.Ports))}
	for _, rows := range c.Tables {
		h.entries += int64(len(rows))
	}
	if c.Tenant != "" {
		if m, err := e.cubeMemory(c); err != nil {
			h.memErr = cube.Within("cubes."+c.Name, err)
		} else {
			h.memory = m
		}
	}
	return h
}

// usage is the index of the applied topology, counted if it is not kept.
func (e *Engine) usage() *usageIndex {
	if u := e.tenants.usage; u != nil {
		return u
	}
	u := &usageIndex{cubes: map[string]holding{}, attached: map[string]int64{}, by: map[string]tenant.Usage{}, bad: map[string]map[string]error{}}
	for name, c := range e.topo.Cubes() {
		u.put(name, e.holdingOf(c))
	}
	for _, list := range e.topo.Attachments {
		u.attach(list, 1)
	}
	e.tenants.usage = u
	return u
}

func (u *usageIndex) of(name string) tenant.Usage {
	use := u.by[name]
	if use == nil {
		use = tenant.Usage{tenant.Cubes: 0, tenant.Ports: 0, tenant.Attachments: 0, tenant.TableEntries: 0, tenant.KernelMemory: 0}
		u.by[name] = use
	}
	return use
}

// put counts cube name as holding h (the cube's attachments move with it
// to its tenant).
func (u *usageIndex) put(name string, h holding) {
	u.drop(name)
	u.cubes[name] = h
	add(u.of(h.tenant), h, u.attached[name], 1)
	if h.memErr != nil {
		if u.bad[h.tenant] == nil {
			u.bad[h.tenant] = map[string]error{}
		}
		u.bad[h.tenant][name] = h.memErr
	}
}

// drop stops counting cube name.
func (u *usageIndex) drop(name string) {
	h, ok := u.cubes[name]
	if !ok {
		return
	}
	add(u.of(h.tenant), h, u.attached[name], -1)
	delete(u.cubes, name)
	delete(u.bad[h.tenant], name)
}

// attach counts the cubes of an attachment list sign times more.
func (u *usageIndex) attach(list []string, sign int64) {
	for _, name := range list {
		u.attached[name] += sign
		if u.attached[name] == 0 {
			delete(u.attached, name)
		}
		if h, ok := u.cubes[name]; ok {
			u.of(h.tenant)[tenant.Attachments] += sign
		}
	}
}

// entries counts n more table entries of cube name (a change of its
// entries in place: entries.go).
func (u *usageIndex) entries(name string, n int64) {
	if h, ok := u.cubes[name]; ok {
		h.entries += n
		u.cubes[name] = h
		u.of(h.tenant)[tenant.TableEntries] += n
	}
}

func add(use tenant.Usage, h holding, attached, sign int64) {
	use[tenant.Cubes] += sign
	use[tenant.Ports] += sign * h.ports
	use[tenant.TableEntries] += sign * h.entries
	use[tenant.KernelMemory] += sign * h.memory
	use[tenant.Attachments] += sign * attached
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
	u := e.usage()
	for _, err := range u.bad[name] {
		return nil, nil, err
	}
	prev = u.of(name)
	now = tenant.Usage{}
	for k, v := range prev {
		now[k] = v
	}
	// attachments: the lists the change altered, as they were and are
	for _, point := range d.points {
		for _, n := range e.topo.Attachments[point] {
			if h, ok := u.cubes[n]; ok && h.tenant == name {
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
		kept := u.attached[n]
		for _, point := range d.points {
			for _, m := range e.topo.Attachments[point] {
				if m == n {
					kept--
				}
			}
		}
		if h, ok := u.cubes[n]; ok && h.tenant == name {
			add(now, h, kept, -1)
		}
		if c := next.Lookup(n); c != nil && c.Tenant == name {
			h := e.holdingOf(c)
			if h.memErr != nil {
				return nil, nil, h.memErr
			}
			add(now, h, kept, 1)
		}
	}
	return prev, now, nil
}

// noteUsage brings the index up to date with a change applied: its
// changed cubes and attachment points (a declarative apply's, all: the
// index is counted again when next needed).
func (e *Engine) noteUsage(prev, next *cube.Topology, cs *changeSet, all bool) {
	u := e.tenants.usage
	if u == nil {
		return
	}
	if all {
		e.tenants.usage = nil
		return
	}
	for _, point := range cs.points {
		u.attach(prev.Attachments[point], -1)
		u.attach(next.Attachments[point], 1)
	}
	for name := range cs.changed {
		if c := next.Lookup(name); c != nil {
			u.put(name, e.holdingOf(c))
		} else {
			u.drop(name)
		}
	}
}
