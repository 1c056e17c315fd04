package tenant

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
)

// Scope is what one actor may touch: its cubes, and for a tenant the
// interfaces it was given (Record, nil: none).
type Scope struct {
	Actor  Actor
	Record *Tenant
}

// Every refusal below reads the same whether the thing named is missing or
// belongs to someone else: "no cube named x" for cubes, "not assigned" for
// interfaces. A tenant learns nothing about what others have.

func noCube(field, name string) error { return cube.NotFound(field, "no cube named %q", name) }

func (s Scope) notAssigned(field, iface string) error {
	return cube.Forbidden(field, "interface %q is not assigned to tenant %s", iface, s.Actor.Name())
}

// NewCube checks the name of a cube the actor creates: a tenant with a
// cube prefix names its cubes with it. Checked before whether the name is
// taken, so that such a tenant learns nothing of names outside its prefix.
func (s Scope) NewCube(field, name string) error {
	if s.Actor.IsAdmin() || s.Record == nil || s.Record.CubePrefix == "" || s.Record.NamedIn(name) {
		return nil
	}
	return cube.Forbidden(field, "tenant %s names its cubes %s...: %q does not start so", s.Actor.Name(), s.Record.CubePrefix, name)
}

// Ref checks a peer or an attachment point a request names ("cube:port" or
// an interface): a tenant may name its own cubes' ports and its interfaces.
// Malformed references pass: validation reports them.
func (s Scope) Ref(t *cube.Topology, field, ref string) error {
	if s.Actor.IsAdmin() {
		return nil
	}
	ep, err := cube.ParseEndpoint(ref)
	if err != nil {
		return nil
	}
	if ep.IsCube() {
		if !s.Actor.Owns(t.Lookup(ep.Cube)) {
			return noCube(field, ep.Cube)
		}
		return nil
	}
	if !s.Record.Owns(ep.Iface) {
		return s.notAssigned(field, ep.Iface)
	}
	// An interface given to this tenant that a cube of someone else is
	// peered with (the administrator did that) is busy; whose it is stays
	// unsaid.
	for _, c := range t.Cubes() {
		if s.Actor.Owns(c) {
			continue
		}
		for _, p := range c.Ports {
			if p.Peer == ep.Iface {
				return cube.Conflict(field, "interface %s is in use", ep.Iface)
			}
		}
	}
	return nil
}

// Change checks a change a tenant asked for, before it is validated: next
// may differ from prev only in the tenant's cubes and in attachments of its
// cubes to points it owns, and what changed may name only what it owns.
// The administrator may change anything.
func (s Scope) Change(prev, next *cube.Topology) error {
	return s.ChangeOf(prev, next, next.ChangedSince(prev))
}

// ChangeOf is Change for a caller that knows which cubes differ (changed,
// in order, as cube.Topology.ChangedSince lists them): a cube that did not
// change passes whoever owns it, so only those are looked at.
func (s Scope) ChangeOf(prev, next *cube.Topology, changed []string) error {
	if s.Actor.IsAdmin() {
		return nil
	}
	for _, name := range changed {
		if !next.Has(name) {
			if !s.Actor.Owns(prev.Lookup(name)) {
				return noCube("cubes", name)
			}
			continue
		}
		if err := s.cube(prev, next, name); err != nil {
			return err
		}
	}
	return s.attachments(prev, next)
}

func (s Scope) cube(prev, next *cube.Topology, name string) error {
	n, p := next.Lookup(name), prev.Lookup(name)
	mine, wasMine := s.Actor.Owns(n), p == nil || s.Actor.Owns(p)
	switch {
	case !wasMine && !mine:
		// Someone else's: unchanged, but for the peerings with the
		// tenant's ports it removed (it deleted its end).
		if !sameButUnpeered(p, n, s.Actor, prev) {
			return noCube("cubes", name)
		}
		return nil
	case !wasMine:
		return noCube("cubes", name)
	case p == nil && mine:
		if err := s.NewCube("cubes."+name+".name", name); err != nil {
			return err
		}
	case !mine && p == nil:
		return cube.Forbidden("cubes."+name+".tenant", "a tenant token creates cubes of its own tenant only")
	case !mine:
		return cube.Forbidden("cubes."+name+".tenant", "only an administrator moves cubes between tenants")
	}
	field := "cubes." + name
	for _, port := range n.Ports {
		var was string
		if p != nil {
			if op := p.Port(port.Name); op != nil {
				was = op.Peer
			}
		}
		if port.Peer != "" && port.Peer != was {
			if err := s.Ref(next, fmt.Sprintf("%s.ports[%s].peer", field, port.Name), port.Peer); err != nil {
				return err
			}
		}
	}
	typ, err := cube.Lookup(n.Type)
	if err != nil {
		return nil // validation reports it
	}
	if err := s.slices(typ, p, n, next); err != nil {
		return err
	}
	if p != nil && p.Type == n.Type && bytes.Equal(p.Config, n.Config) {
		return nil
	}
	var had []string
	if p != nil && p.Type == n.Type {
		had = typ.ConfigInterfaces(p)
	}
	for _, iface := range typ.ConfigInterfaces(n) {
		if slices.Contains(had, iface) {
			continue
		}
		if !s.Record.Owns(iface) {
			return s.notAssigned(field+".config", iface)
		}
		if s.namedByOthers(next, iface) {
			return cube.Conflict(field+".config", "interface %s is in use", iface)
		}
	}
	return nil
}

// namedByOthers reports whether a cube of another owner names iface in its
// settings (a slicer that shapes its egress, a ddos cube that mirrors to
// it): an interface given to the tenant that the administrator put to such
// a use is busy, as one another owner's cube is peered with (Ref). Without
// this a tenant's slicer would take over the root qdisc another slicer
// shapes the interface with. Whose cube it is stays unsaid.
func (s Scope) namedByOthers(t *cube.Topology, iface string) bool {
	for _, c := range t.Cubes() {
		if s.Actor.Owns(c) || len(c.Config) == 0 {
			continue
		}
		typ, err := cube.Lookup(c.Type)
		if err != nil {
			continue
		}
		if slices.Contains(typ.ConfigInterfaces(c), iface) {
			return true
		}
	}
	return false
}

// slices checks the slices of a tenant's slicing cube that the change
// adds or alters: each is the tenant's own, and one that leads straight
// into a chain entry names a port of the tenant's own cube. Otherwise a
// tenant's slicer could steer its entry's traffic into another tenant's
// (or the administrator's) chain, take that chain's return traffic, and
// label its counters and captures with another tenant's name; and the
// engine's check of the entry would tell it whose the named cube is.
func (s Scope) slices(typ *cube.Type, prev, next *cube.Cube, nextTopo *cube.Topology) error {
	if typ.Slices == nil {
		return nil
	}
	list, err := typ.Slices(next)
	if err != nil {
		return nil // validation reports it
	}
	was := map[string]cube.Slice{}
	if prev != nil && prev.Type == next.Type {
		old, _ := typ.Slices(prev)
		for _, sl := range old {
			was[sl.Name] = sl
		}
	}
	for _, sl := range list {
		if old, ok := was[sl.Name]; ok && old.Tenant == sl.Tenant && old.Chain == sl.Chain {
			continue
		}
		field := fmt.Sprintf("cubes.%s.tables.slices[%s]", next.Name, sl.Name)
		if sl.Tenant != s.Actor.Name() {
			return cube.Forbidden(field+".tenant", "a tenant's slicer holds slices of its own tenant only: set tenant %s", s.Actor.Name())
		}
		if sl.Chain == "" {
			continue
		}
		if ep, err := cube.ParseEndpoint(sl.Chain); err == nil && ep.IsCube() && !s.Actor.Owns(nextTopo.Lookup(ep.Cube)) {
			return noCube(field+".chain", ep.Cube)
		}
	}
	return nil
}

// sameButUnpeered reports whether next is prev with, at most, peerings with
// the actor's ports (as of prevTopo) removed.
func sameButUnpeered(prev, next *cube.Cube, a Actor, prevTopo *cube.Topology) bool {
	if prev.Equal(next) {
		return true
	}
	c := prev.Clone()
	for i := range c.Ports {
		p := &c.Ports[i]
		ep, err := cube.ParseEndpoint(p.Peer)
		if err != nil || !ep.IsCube() || !a.Owns(prevTopo.Lookup(ep.Cube)) {
			continue
		}
		if np := next.Port(p.Name); np != nil && np.Peer == "" {
			p.Peer = ""
		}
	}
	return c.Equal(next)
}

// attachments checks every attachment point whose stack changed: the cubes
// put on it are the tenant's, on a point it owns; other owners' cubes stay
// where they were, in their order, unless the tenant deleted the port they
// were on.
func (s Scope) attachments(prev, next *cube.Topology) error {
	points := map[string]bool{}
	for p := range prev.Attachments {
		points[p] = true
	}
	for p := range next.Attachments {
		points[p] = true
	}
	for point := range points {
		before, after := prev.Attachments[point], next.Attachments[point]
		if slices.Equal(before, after) {
			continue
		}
		field := "attachments." + point
		theirs := func(list []string, t *cube.Topology) []string {
			var out []string
			for _, c := range list {
				if !s.Actor.Owns(t.Lookup(c)) {
					out = append(out, c)
				}
			}
			return out
		}
		if !slices.Equal(theirs(before, prev), theirs(after, next)) && !(len(after) == 0 && s.ownPortGone(prev, next, point)) {
			return noCube(field, point)
		}
		for _, c := range after {
			if slices.Contains(before, c) || !s.Actor.Owns(next.Lookup(c)) {
				continue
			}
			if err := s.Ref(next, "point", point); err != nil {
				return err
			}
		}
	}
	return nil
}

// ownPortGone reports whether point is a port of the actor's cube that the
// change deleted.
func (s Scope) ownPortGone(prev, next *cube.Topology, point string) bool {
	ep, err := cube.ParseEndpoint(point)
	if err != nil || !ep.IsCube() || !s.Actor.Owns(prev.Lookup(ep.Cube)) {
		return false
	}
	c := next.Lookup(ep.Cube)
	return c == nil || c.Port(ep.Port) == nil
}
