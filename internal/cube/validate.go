package cube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sort"

	"github.com/edgenf/edgenf/internal/datapath"
)

// System answers questions about the host the model refers to.
type System interface {
	// IfaceExists reports whether a Linux interface of that name exists.
	IfaceExists(name string) bool
}

// Validate checks the whole topology: every cube, port, peer, attachment and
// NF setting. It fills in defaults (hook) in place. The first problem found is
// returned, naming its field.
func (t *Topology) Validate(sys System) error {
	return t.ValidateChange(nil, sys)
}

// ValidateChange is Validate for a topology derived from prev, already
// valid: cubes equal to their counterpart in prev skip the checks that only
// depend on the cube itself (settings, entries), so a change costs what it
// changes, not the size of the topology. Peers and attachments, which depend
// on other cubes, are always checked.
func (t *Topology) ValidateChange(prev *Topology, sys System) error {
	ifacePeers := map[string]string{}
	// Defaults first: peers' hooks are compared below.
	for _, c := range t.Cubes {
		if typ, err := Lookup(c.Type); err == nil && c.Hook == "" {
			c.Hook = typ.Hooks[0]
		}
	}
	for _, name := range t.CubeNames() {
		c := t.Cubes[name]
		var old *Cube
		if prev != nil {
			old = prev.Cubes[name]
		}
		if err := t.validateCube(c, old, sys, ifacePeers); err != nil {
			return Within("cubes."+name, err)
		}
	}
	return t.validateAttachments(sys, ifacePeers)
}

// validateCube checks one cube; old is its previous, valid version (or nil).
func (t *Topology) validateCube(c, old *Cube, sys System, ifacePeers map[string]string) error {
	if old != nil && old.Equal(c) {
		// Only what other cubes can break: peers.
		for i := range c.Ports {
			if p := &c.Ports[i]; p.Peer != "" {
				if err := t.validatePeer(c, p, sys, ifacePeers); err != nil {
					return Within(fmt.Sprintf("ports[%s].peer", p.Name), err)
				}
			}
		}
		return nil
	}
	if err := CheckName("name", c.Name); err != nil {
		return err
	}
	typ, err := Lookup(c.Type)
	if err != nil {
		return err
	}
	if c.Hook == "" {
		c.Hook = typ.Hooks[0]
	}
	if _, err := datapath.ParseHook(string(c.Hook)); err != nil {
		return Errorf("hook", "%v", err)
	}
	if !typ.SupportsHook(c.Hook) {
		return Errorf("hook", "NF type %s does not run at hook %s (supported: %v)", typ.Name, c.Hook, typ.Hooks)
	}
	if c.Tenant != "" {
		if err := CheckName("tenant", c.Tenant); err != nil {
			return err
		}
	}
	if typ.Transparent && len(c.Ports) > 0 {
		return Errorf("ports", "%s is a transparent NF type: it has no ports; attach it to a port or interface instead", typ.Name)
	}
	if err := t.validatePorts(c, typ, sys, ifacePeers); err != nil {
		return err
	}
	cfg, err := typ.decodeConfig(c, old)
	if err != nil {
		return err
	}
	if cfg != nil {
		c.Config, _ = json.Marshal(cfg)
	} else {
		c.Config = nil
	}
	// With ports and settings as before, entries that did not change are
	// still valid: only new and changed ones are checked (big tables).
	if old != nil && SameButTables(old, c) {
		return validateTables(c, typ, old)
	}
	return validateTables(c, typ, nil)
}

// SameButTables reports whether two cubes differ in their tables only.
func SameButTables(a, b *Cube) bool {
	x, y := *a, *b
	x.Tables, y.Tables = nil, nil
	return x.Equal(&y)
}

func (t *Topology) validatePorts(c *Cube, typ *Type, sys System, ifacePeers map[string]string) error {
	names := map[string]bool{}
	idx := map[int]string{}
	for i := range c.Ports {
		p := &c.Ports[i]
		field := fmt.Sprintf("ports[%s]", p.Name)
		if err := CheckName(field+".name", p.Name); err != nil {
			return err
		}
		if names[p.Name] {
			return Conflict(field+".name", "duplicate port name %q", p.Name)
		}
		names[p.Name] = true
		if p.Index < 0 || p.Index >= datapath.MaxPorts {
			return Errorf(field+".index", "port index %d out of range 0..%d", p.Index, datapath.MaxPorts-1)
		}
		if other, dup := idx[p.Index]; dup {
			return Conflict(field+".index", "index %d already used by port %s", p.Index, other)
		}
		idx[p.Index] = p.Name
		if err := checkPortAddrs(field, p); err != nil {
			return err
		}
		if typ.PortConfig != nil {
			v, err := Decode(field+".config", p.Config, typ.PortConfig)
			if err != nil {
				return err
			}
			// one canonical form, as settings and entries have
			if canon, err := json.Marshal(v); err == nil && len(p.Config) > 0 {
				p.Config = canon
			}
		} else if len(p.Config) > 0 && string(p.Config) != "null" && string(p.Config) != "{}" {
			return Errorf(field+".config", "NF type %s has no port settings", typ.Name)
		}
		if p.Peer == "" {
			continue
		}
		if err := t.validatePeer(c, p, sys, ifacePeers); err != nil {
			return Within(field+".peer", err)
		}
	}
	return nil
}

// checkPortAddrs checks a port's own addresses: a port is one host on its
// link, so its MAC is a unicast one and its addresses are unicast
// addresses of their subnets (not the subnet's broadcast address).
func checkPortAddrs(field string, p *Port) error {
	if p.MAC != "" {
		hw, err := net.ParseMAC(p.MAC)
		switch {
		case err != nil || len(hw) != 6:
			return Errorf(field+".mac", "invalid MAC address %q", p.MAC)
		case hw[0]&1 != 0:
			return Errorf(field+".mac", "%s is a multicast or broadcast MAC address: a port's MAC is unicast", p.MAC)
		case bytes.Equal(hw, make(net.HardwareAddr, 6)):
			return Errorf(field+".mac", "%s is the zero MAC address", p.MAC)
		}
	}
	for _, a := range p.Addresses {
		pfx, err := netip.ParsePrefix(a)
		if err != nil {
			return Errorf(field+".addresses", "invalid address %q: want address/prefix-length, e.g. 198.18.0.1/24", a)
		}
		if err := unicastHost(pfx); err != nil {
			return Within(field+".addresses", err)
		}
	}
	return nil
}

// unicastHost refuses addresses a port cannot have as its own: those the
// API's document excludes (400), and the broadcast address of the port's
// subnet, which a pattern cannot tell (422).
func unicastHost(p netip.Prefix) error {
	a := p.Addr()
	switch {
	case a.IsUnspecified():
		return Errorf("", "%s: the unspecified address is no port's address", p)
	case a.IsMulticast():
		return Errorf("", "%s: a multicast address is no port's address", p)
	case a.IsLoopback():
		return Errorf("", "%s: a loopback address is no port's address", p)
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return Errorf("", "%s: the broadcast address is no port's address", p)
	}
	if a.Is4() && p.Bits() < 31 {
		b := a.As4()
		host := ^uint32(0) >> p.Bits()
		if (uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]))&host == host {
			return Unprocessable("", "%s: the broadcast address of %s is no port's address", p, p.Masked())
		}
	}
	return nil
}

func (t *Topology) validatePeer(c *Cube, p *Port, sys System, ifacePeers map[string]string) error {
	ep, err := ParseEndpoint(p.Peer)
	if err != nil {
		return Errorf("", "%v", err)
	}
	self := c.Name + ":" + p.Name
	if !ep.IsCube() {
		if sys != nil && !sys.IfaceExists(ep.Iface) {
			return NotFound("", "no Linux interface named %q", ep.Iface)
		}
		if other, taken := ifacePeers[ep.Iface]; taken {
			return Conflict("", "interface %s is already the peer of %s", ep.Iface, other)
		}
		ifacePeers[ep.Iface] = self
		return nil
	}
	if ep.String() == self {
		return Unprocessable("", "port %s cannot be peered with itself", self)
	}
	oc, ok := t.Cubes[ep.Cube]
	if !ok {
		return NotFound("", "no cube named %q", ep.Cube)
	}
	op := oc.Port(ep.Port)
	if op == nil {
		return NotFound("", "cube %s has no port %q", ep.Cube, ep.Port)
	}
	if op.Peer != self {
		if op.Peer != "" {
			return Conflict("", "port %s is already peered with %s", ep, op.Peer)
		}
		return Errorf("", "port %s is not peered back with %s", ep, self)
	}
	if oc.Hook != c.Hook && oc.Hook != "" && c.Hook != "" {
		return Errorf("", "cannot peer %s (hook %s) with %s (hook %s): XDP and TC programs cannot call each other; join them through a veth pair instead", self, c.Hook, ep, oc.Hook)
	}
	return nil
}

func validateTables(c *Cube, typ *Type, old *Cube) error {
	for name, rows := range c.Tables {
		tb, err := typ.Table(name)
		if err != nil {
			return Within("tables", err)
		}
		if tb.Max > 0 && len(rows) > tb.Max {
			return Full("tables."+name, "%d entries, at most %d", len(rows), tb.Max)
		}
		var before map[string]json.RawMessage
		if old != nil {
			before = old.Tables[name]
		}
		for key, raw := range rows {
			if prev, ok := before[key]; ok && bytes.Equal(prev, raw) {
				continue
			}
			v, k, err := tb.DecodeEntry(c, raw)
			if err != nil {
				return err
			}
			if k != key {
				return Errorf("tables."+name, "entry stored under key %q has key %q", key, k)
			}
			// Store entries in one canonical form so equal entries compare equal.
			if canon, err := json.Marshal(v); err == nil {
				rows[key] = canon
			}
		}
	}
	return nil
}

func (t *Topology) validateAttachments(sys System, ifacePeers map[string]string) error {
	seen := map[string]string{}
	points := make([]string, 0, len(t.Attachments))
	for p := range t.Attachments {
		points = append(points, p)
	}
	sort.Strings(points)
	for _, point := range points {
		list := t.Attachments[point]
		field := "attachments." + point
		hook, err := t.pointHook(point, sys, ifacePeers)
		if err != nil {
			return Within(field, err)
		}
		if len(list) > datapath.MaxStack {
			return Errorf(field, "%d transparent cubes, at most %d on one point", len(list), datapath.MaxStack)
		}
		for _, name := range list {
			c, ok := t.Cubes[name]
			if !ok {
				return NotFound(field, "no cube named %q", name)
			}
			typ, err := Lookup(c.Type)
			if err != nil {
				return Within(field, err)
			}
			if !typ.Transparent {
				return Errorf(field, "%s is a %s cube, not transparent: peer it with a port instead", name, c.Type)
			}
			if prev, dup := seen[name]; dup {
				return Conflict(field, "%s is already attached to %s", name, prev)
			}
			seen[name] = point
			if hook == "" {
				hook = c.Hook // an unpeered interface: the first cube decides
			}
			if c.Hook != hook {
				return Errorf(field, "%s runs at hook %s but %s is served by hook %s", name, c.Hook, point, hook)
			}
		}
	}
	return nil
}

// pointHook checks an attachment point exists and returns the hook that serves
// it ("" for an interface no cube is peered with: either hook will do).
func (t *Topology) pointHook(point string, sys System, ifacePeers map[string]string) (datapath.Hook, error) {
	ep, err := ParseEndpoint(point)
	if err != nil {
		return "", Errorf("", "%v", err)
	}
	if !ep.IsCube() {
		if sys != nil && !sys.IfaceExists(ep.Iface) {
			return "", NotFound("", "no Linux interface named %q", ep.Iface)
		}
		if owner, ok := ifacePeers[ep.Iface]; ok {
			oep, _ := ParseEndpoint(owner)
			return t.Cubes[oep.Cube].Hook, nil
		}
		return "", nil
	}
	c, ok := t.Cubes[ep.Cube]
	if !ok {
		return "", NotFound("", "no cube named %q", ep.Cube)
	}
	if c.Port(ep.Port) == nil {
		return "", NotFound("", "cube %s has no port %q", ep.Cube, ep.Port)
	}
	return c.Hook, nil
}
