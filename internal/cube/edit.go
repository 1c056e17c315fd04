package cube

import (
	"encoding/json"
	"slices"
)

// The mutations below are what the REST API, the CLI and tests do to a
// topology. Each checks what it can locally; Topology.Validate checks the
// result as a whole before it is applied. They change cubes only through
// Edit, Put and Remove (cow.go), so that a change records what it touched.

// AddCube adds a new cube.
func (t *Topology) AddCube(c *Cube) error {
	if err := CheckName("name", c.Name); err != nil {
		return err
	}
	if _, dup := t.cubes[c.Name]; dup {
		return Conflict("name", "a cube named %q already exists", c.Name)
	}
	if _, err := Lookup(c.Type); err != nil {
		return err
	}
	// Peers named in the new cube's ports are peered back, as with SetPeer.
	ports := c.Ports
	c.Ports = nil
	t.Put(c)
	for _, p := range ports {
		if err := t.AddPort(c.Name, p); err != nil {
			t.Remove(c.Name)
			return err
		}
	}
	return nil
}

// Cube finds a cube by name, to read: it may be shared with the applied
// state (cow.go); Edit returns one to change.
func (t *Topology) Cube(name string) (*Cube, error) {
	c, ok := t.cubes[name]
	if !ok {
		return nil, NotFound("cube", "no cube named %q", name)
	}
	return c, nil
}

// DeleteCube removes a cube, its peerings and its attachments. Cube ports
// peered with it become unpeered; transparent cubes attached to its ports are
// detached.
func (t *Topology) DeleteCube(name string) error {
	c, err := t.Cube(name)
	if err != nil {
		return err
	}
	for _, p := range c.Ports {
		t.unpeer(name, p.Name)
		t.SetAttachments(name+":"+p.Name, nil)
	}
	t.Detach(name)
	t.Remove(name)
	return nil
}

// AddPort adds a port (index -1 or unset picks the lowest free index) and
// peers it if p.Peer is set.
func (t *Topology) AddPort(cubeName string, p Port) error {
	c, err := t.Cube(cubeName)
	if err != nil {
		return err
	}
	if err := CheckName("port", p.Name); err != nil {
		return err
	}
	if c.Port(p.Name) != nil {
		return Conflict("port", "cube %s already has a port %q", cubeName, p.Name)
	}
	if p.Index < 0 {
		p.Index = c.FreeIndex()
	}
	peer := p.Peer
	p.Peer = ""
	c, _ = t.Edit(cubeName)
	c.Ports = append(c.Ports, p)
	if peer != "" {
		return t.SetPeer(cubeName+":"+p.Name, peer)
	}
	return nil
}

// DeletePort removes a port, its peering and its attachments.
func (t *Topology) DeletePort(cubeName, port string) error {
	c, err := t.Cube(cubeName)
	if err != nil {
		return err
	}
	if c.Port(port) == nil {
		return NotFound("port", "cube %s has no port %q", cubeName, port)
	}
	t.unpeer(cubeName, port)
	t.SetAttachments(cubeName+":"+port, nil)
	c, _ = t.Edit(cubeName)
	c.Ports = slices.DeleteFunc(c.Ports, func(p Port) bool { return p.Name == port })
	return nil
}

// SetPeer peers a cube port ("cube:port") with an interface or another cube
// port; both sides of a cube-cube peering are set.
func (t *Topology) SetPeer(portRef, peer string) error {
	a, err := ParseEndpoint(portRef)
	if err != nil || !a.IsCube() {
		return Errorf("port", "want cube:port, got %q", portRef)
	}
	ca, err := t.Edit(a.Cube)
	if err != nil {
		return err
	}
	pa := ca.Port(a.Port)
	if pa == nil {
		return NotFound("port", "cube %s has no port %q", a.Cube, a.Port)
	}
	b, err := ParseEndpoint(peer)
	if err != nil {
		return Errorf("peer", "%v", err)
	}
	if pa.Peer != "" && pa.Peer != peer {
		return Conflict("peer", "port %s is already peered with %s", portRef, pa.Peer)
	}
	if !b.IsCube() {
		pa.Peer = peer
		return nil
	}
	if b.String() == a.String() {
		return Unprocessable("peer", "port %s cannot be peered with itself", portRef)
	}
	cb, err := t.Edit(b.Cube)
	if err != nil {
		return Within("peer", err)
	}
	pb := cb.Port(b.Port)
	if pb == nil {
		return NotFound("peer", "cube %s has no port %q", b.Cube, b.Port)
	}
	if pb.Peer != "" && pb.Peer != portRef {
		return Conflict("peer", "port %s is already peered with %s", peer, pb.Peer)
	}
	pa.Peer, pb.Peer = peer, portRef
	return nil
}

// Unpeer removes the peering of a cube port (both sides).
func (t *Topology) Unpeer(portRef string) error {
	a, err := ParseEndpoint(portRef)
	if err != nil || !a.IsCube() {
		return Errorf("port", "want cube:port, got %q", portRef)
	}
	c, err := t.Cube(a.Cube)
	if err != nil {
		return err
	}
	if c.Port(a.Port) == nil {
		return NotFound("port", "cube %s has no port %q", a.Cube, a.Port)
	}
	t.unpeer(a.Cube, a.Port)
	return nil
}

func (t *Topology) unpeer(cubeName, port string) {
	if p := t.cubes[cubeName].Port(port); p == nil || p.Peer == "" {
		return
	}
	c, _ := t.Edit(cubeName)
	p := c.Port(port)
	if ep, err := ParseEndpoint(p.Peer); err == nil && ep.IsCube() {
		if oc, ok := t.cubes[ep.Cube]; ok {
			if op := oc.Port(ep.Port); op != nil && op.Peer == cubeName+":"+port {
				oc, _ = t.Edit(ep.Cube)
				oc.Port(ep.Port).Peer = ""
			}
		}
	}
	p.Peer = ""
}

// Attach puts a transparent cube on a point at a position: "first"
// (outermost), "last" (default, innermost), "before:<cube>" or "after:<cube>".
func (t *Topology) Attach(cubeName, point, position string) error {
	if _, err := t.Cube(cubeName); err != nil {
		return err
	}
	if prev := t.AttachedTo(cubeName); prev != "" {
		return Conflict("cube", "%s is already attached to %s; detach it first", cubeName, prev)
	}
	if _, err := ParseEndpoint(point); err != nil {
		return Errorf("point", "%v", err)
	}
	list := t.Attachments[point]
	at := len(list)
	switch {
	case position == "" || position == "last":
	case position == "first":
		at = 0
	default:
		rel, other := splitPosition(position)
		if rel == "" {
			return Errorf("position", "invalid position %q: want first, last, before:<cube> or after:<cube> with a cube attached to %s", position, point)
		}
		i := slices.Index(list, other)
		if i < 0 {
			return NotFound("position", "no cube %q is attached to %s", other, point)
		}
		at = i
		if rel == "after" {
			at = i + 1
		}
	}
	t.SetAttachments(point, slices.Insert(slices.Clone(list), at, cubeName))
	return nil
}

func splitPosition(s string) (string, string) {
	for _, rel := range []string{"before", "after"} {
		if len(s) > len(rel)+1 && s[:len(rel)] == rel && s[len(rel)] == ':' {
			return rel, s[len(rel)+1:]
		}
	}
	return "", ""
}

// Detach removes a transparent cube from its point; a no-op if unattached.
func (t *Topology) Detach(cubeName string) {
	for p, list := range t.Attachments {
		if i := slices.Index(list, cubeName); i >= 0 {
			t.SetAttachments(p, slices.Delete(slices.Clone(list), i, i+1))
		}
	}
}

// PutEntry adds or replaces a table entry and returns its key.
func (t *Topology) PutEntry(cubeName, table string, raw json.RawMessage) (string, error) {
	c, err := t.Cube(cubeName)
	if err != nil {
		return "", err
	}
	typ, err := Lookup(c.Type)
	if err != nil {
		return "", err
	}
	tb, err := typ.Table(table)
	if err != nil {
		return "", err
	}
	v, key, err := tb.DecodeEntry(c, raw)
	if err != nil {
		return "", err
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	c, _ = t.Edit(cubeName)
	c.SetRow(table, key, canon)
	return key, nil
}

// DeleteEntry removes a table entry by key.
func (t *Topology) DeleteEntry(cubeName, table, key string) error {
	c, err := t.Cube(cubeName)
	if err != nil {
		return err
	}
	typ, err := Lookup(c.Type)
	if err != nil {
		return err
	}
	if _, err := typ.Table(table); err != nil {
		return err
	}
	if _, ok := c.Tables[table][key]; !ok {
		return NotFound("key", "table %s of %s has no entry %q", table, cubeName, key)
	}
	c, _ = t.Edit(cubeName)
	c.SetRow(table, key, nil)
	return nil
}

// SetRuntime sets (raw nil: removes) a service's runtime state of a cube.
func (t *Topology) SetRuntime(cubeName, service string, raw json.RawMessage) error {
	c, err := t.Edit(cubeName)
	if err != nil {
		return err
	}
	if raw == nil {
		delete(c.Runtime, service)
		if len(c.Runtime) == 0 {
			c.Runtime = nil
		}
		return nil
	}
	if c.Runtime == nil {
		c.Runtime = map[string]json.RawMessage{}
	}
	c.Runtime[service] = raw
	return nil
}

// Upgrade rewrites cubes of an older state into today's form, with each
// type's Upgrade (settings that moved elsewhere). Cubes of unknown types
// are left for validation to report.
func (t *Topology) Upgrade() error {
	for _, name := range t.CubeNames() {
		if typ, err := Lookup(t.cubes[name].Type); err == nil && typ.Upgrade != nil {
			c, _ := t.Edit(name)
			if err := typ.Upgrade(c); err != nil {
				return Within("cubes."+name, err)
			}
		}
	}
	return nil
}

// SetConfig replaces a cube's settings.
func (t *Topology) SetConfig(cubeName string, raw json.RawMessage) error {
	c, err := t.Edit(cubeName)
	if err != nil {
		return err
	}
	c.Config = raw
	return nil
}
