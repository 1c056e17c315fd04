package cube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/edgenf/edgenf/internal/datapath"
)

// System answers questions about the host the model refers to.
type System interface {
	// IfaceExists reports whether a Linux interface of that name exists.
	IfaceExists(name string) bool
}

// PeerIndex is a System that knows the port ("cube:port") peered with each
// interface in the topology a change starts from (ValidateChanged's prev):
// validation asks it instead of walking every cube to find out.
type PeerIndex interface {
	IfacePeer(iface string) (string, bool)
}

// ShaperIndex is a System that knows the cube shaping each interface's
// egress (Shaper) in the state a change starts from, so that validating a
// shaping cube asks it instead of walking every cube.
type ShaperIndex interface {
	IfaceShaper(iface string) (string, bool)
}

// Validate checks the whole topology: every cube, port, peer, attachment and
// NF setting. It fills in defaults (hook) in place. The first problem found is
// returned, naming its field.
func (t *Topology) Validate(sys System) error {
	return t.ValidateChange(nil, sys)
}

// ValidateChange is Validate for a topology derived from prev, already
// valid: only the cubes that differ from their counterpart in prev are
// checked, with what depends on them (the peers of their ports, the
// attachment points on or naming them), so a change costs what it changes,
// not the size of the topology.
func (t *Topology) ValidateChange(prev *Topology, sys System) error {
	return t.ValidateChanged(prev, t.ChangedSince(prev), sys)
}

// ChangedSince lists, in order, the cubes that differ between prev and t:
// added, changed or deleted (every cube of t when prev is nil). A change of
// a cube's runtime state alone counts: the engine persists it (without
// touching the cube's program, which Equal leaves out).
func (t *Topology) ChangedSince(prev *Topology) []string {
	var out []string
	for name, c := range t.Cubes() {
		if prev == nil {
			out = append(out, name)
		} else if old := prev.cubes[name]; old == nil || (old != c && (!old.Equal(c) || !old.SameRuntime(c))) {
			out = append(out, name)
		}
	}
	if prev != nil {
		for name := range prev.Cubes() {
			if _, ok := t.cubes[name]; !ok {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ValidateChanged is ValidateChange for a caller that knows what changed
// (changed as ChangedSince lists it).
func (t *Topology) ValidateChanged(prev *Topology, changed []string, sys System) error {
	v := &validation{t: t, sys: sys, changed: make(map[string]bool, len(changed)), ifacePeers: map[string]string{}}
	for _, name := range changed {
		v.changed[name] = true
	}
	if prev == nil {
		prev = NewTopology()
	}
	v.prev = prev
	// Defaults first: peers' hooks are compared below.
	for _, name := range changed {
		if c := t.cubes[name]; c != nil && c.Hook == "" {
			if typ, err := Lookup(c.Type); err == nil {
				c.Hook = typ.Hooks[0]
			}
		}
	}
	// Unchanged cubes peered with a changed one: their peer may be gone,
	// or no longer peered back, or at another hook.
	check := map[string]bool{}
	for _, name := range changed {
		if _, ok := t.cubes[name]; ok {
			check[name] = true
		}
		for _, tp := range []*Topology{prev, t} {
			if c := tp.cubes[name]; c != nil {
				for _, p := range c.Ports {
					if ep, err := ParseEndpoint(p.Peer); err == nil && ep.IsCube() && t.cubes[ep.Cube] != nil {
						check[ep.Cube] = true
					}
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(check)) {
		c := t.cubes[name]
		if !v.changed[name] {
			if err := v.peers(c); err != nil {
				return Within("cubes."+name, err)
			}
			continue
		}
		if err := t.validateCube(c, prev.cubes[name], v); err != nil {
			return Within("cubes."+name, err)
		}
	}
	return t.validateAttachments(v)
}

// validation is the state of one ValidateChanged.
type validation struct {
	t, prev *Topology
	sys     System
	changed map[string]bool
	// ifacePeers are the interfaces peered so far, with the port
	// ("cube:port") peered with each; ifaceIndex, built when first needed,
	// those of the unchanged cubes.
	ifacePeers map[string]string
	ifaceIndex map[string]string
	// shapers are the interfaces shaped (Shaper) so far, with the cube
	// shaping each; shaperIndex, built when first needed, those of the
	// unchanged cubes.
	shapers     map[string]string
	shaperIndex map[string]string
}

// shape records that cube name shapes the egress of ifaces, refusing an
// interface another cube shapes: a second tree would replace the first.
// The other cube is named: only the administrator sees this (a tenant is
// told "in use" before, tenant.Scope).
func (v *validation) shape(name string, ifaces []string) error {
	if v.shapers == nil && len(ifaces) > 0 {
		v.shapers = map[string]string{}
	}
	for _, iface := range ifaces {
		other, ok := v.shapers[iface]
		if !ok {
			other, ok = v.unchangedShaper(iface)
		}
		if ok && other != name {
			return Conflict("config", "interface %s is already shaped by cube %s: one cube shapes an interface's egress", iface, other)
		}
		v.shapers[iface] = name
	}
	return nil
}

// unchangedShaper returns the unchanged cube shaping an interface, if any:
// from the System's index (ShaperIndex) when it keeps one, else from
// shaperIndex, built by one walk when first needed.
func (v *validation) unchangedShaper(iface string) (string, bool) {
	if x, ok := v.sys.(ShaperIndex); ok {
		// an unchanged cube shapes the same in t as in prev
		if name, ok := x.IfaceShaper(iface); ok && !v.changed[name] {
			return name, true
		}
		return "", false
	}
	if v.shaperIndex == nil {
		v.shaperIndex = map[string]string{}
		for name, c := range v.t.Cubes() {
			if v.changed[name] {
				continue
			}
			for _, iface := range ShapedBy(c) {
				v.shaperIndex[iface] = name
			}
		}
	}
	name, ok := v.shaperIndex[iface]
	return name, ok
}

// ShapedBy names the interfaces c's settings shape, without decoding the
// settings of types that shape none.
func ShapedBy(c *Cube) []string {
	typ, err := Lookup(c.Type)
	if err != nil || len(c.Config) == 0 {
		return nil
	}
	if _, ok := typ.Config.(Shaper); !ok {
		return nil
	}
	v, err := Decode("config", c.Config, typ.Config)
	if err != nil {
		return nil
	}
	return v.(Shaper).Shaped()
}

// ifacePeer returns the port peered with an interface: a changed cube's
// checked so far, or an unchanged cube's.
func (v *validation) ifacePeer(iface string) (string, bool) {
	if p, ok := v.ifacePeers[iface]; ok {
		return p, true
	}
	if x, ok := v.sys.(PeerIndex); ok {
		// an unchanged cube's peer is the same in t as in prev
		if p, ok := x.IfacePeer(iface); ok && !v.changed[strings.SplitN(p, ":", 2)[0]] {
			return p, true
		}
		return "", false
	}
	if v.ifaceIndex == nil {
		v.ifaceIndex = map[string]string{}
		for name, c := range v.t.Cubes() {
			if v.changed[name] {
				continue
			}
			for _, p := range c.Ports {
				if p.Peer != "" && !strings.Contains(p.Peer, ":") {
					v.ifaceIndex[p.Peer] = name + ":" + p.Name
				}
			}
		}
	}
	p, ok := v.ifaceIndex[iface]
	return p, ok
}

// peers checks the peers of an unchanged cube's ports: only what other
// cubes can break.
func (v *validation) peers(c *Cube) error {
	for i := range c.Ports {
		if p := &c.Ports[i]; p.Peer != "" {
			if err := v.t.validatePeer(c, p, v); err != nil {
				return Within(fmt.Sprintf("ports[%s].peer", p.Name), err)
			}
		}
	}
	return nil
}

// validateCube checks one changed cube; old is its previous, valid version
// (or nil).
func (t *Topology) validateCube(c, old *Cube, v *validation) error {
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
	if err := t.validatePorts(c, typ, v); err != nil {
		return err
	}
	cfg, err := typ.decodeConfig(c, old)
	if err != nil {
		return err
	}
	if sh, ok := cfg.(Shaper); ok {
		if err := v.shape(c.Name, sh.Shaped()); err != nil {
			return err
		}
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

func (t *Topology) validatePorts(c *Cube, typ *Type, v *validation) error {
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
		if err := t.validatePeer(c, p, v); err != nil {
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

func (t *Topology) validatePeer(c *Cube, p *Port, v *validation) error {
	ep, err := ParseEndpoint(p.Peer)
	if err != nil {
		return Errorf("", "%v", err)
	}
	self := c.Name + ":" + p.Name
	if !ep.IsCube() {
		if v.sys != nil && !v.sys.IfaceExists(ep.Iface) {
			return NotFound("", "no Linux interface named %q", ep.Iface)
		}
		if other, taken := v.ifacePeer(ep.Iface); taken && other != self {
			return Conflict("", "interface %s is already the peer of %s", ep.Iface, other)
		}
		v.ifacePeers[ep.Iface] = self
		return nil
	}
	if ep.String() == self {
		return Unprocessable("", "port %s cannot be peered with itself", self)
	}
	oc, op, err := t.peerPort(ep)
	if err != nil {
		return err
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

// peerPort finds the cube port a peer names.
func (t *Topology) peerPort(ep Endpoint) (*Cube, *Port, error) {
	oc, ok := t.cubes[ep.Cube]
	if !ok {
		return nil, nil, NotFound("", "no cube named %q", ep.Cube)
	}
	op := oc.Port(ep.Port)
	if op == nil {
		return nil, nil, NotFound("", "cube %s has no port %q", ep.Cube, ep.Port)
	}
	return oc, op, nil
}

func validateTables(c *Cube, typ *Type, old *Cube) error {
	for name, rows := range c.Tables {
		tb, err := typ.Table(name)
		if err != nil {
			return Within("tables", err)
		}
		if max := tb.Limit(c); max > 0 && len(rows) > max {
			return Full("tables."+name, "%d entries, at most %d", len(rows), max)
		}
	}
	// the entries old does not have as they are (all: a new cube)
	var check []Row
	if old != nil {
		check = ChangedRows(old, c)
	} else {
		for name, rows := range c.Tables {
			for key := range rows {
				check = append(check, Row{name, key})
			}
		}
	}
	for _, r := range check {
		raw, ok := c.Tables[r.Table][r.Key]
		if !ok {
			continue
		}
		tb, _ := typ.Table(r.Table)
		v, k, err := tb.DecodeEntry(c, raw)
		if err != nil {
			return err
		}
		if k != r.Key {
			return Errorf("tables."+r.Table, "entry stored under key %q has key %q", r.Key, k)
		}
		// Store entries in one canonical form so equal entries compare equal.
		if canon, err := json.Marshal(v); err == nil {
			c.SetRow(r.Table, r.Key, canon)
		}
	}
	return nil
}

func (t *Topology) validateAttachments(v *validation) error {
	seen := map[string]string{}
	for _, point := range slices.Sorted(maps.Keys(t.Attachments)) {
		list := t.Attachments[point]
		field := "attachments." + point
		if !v.affects(point, list) {
			for _, name := range list {
				seen[name] = point
			}
			continue
		}
		hook, err := t.pointHook(point, v)
		if err != nil {
			return Within(field, err)
		}
		if len(list) > datapath.MaxStack {
			return Errorf(field, "%d transparent cubes, at most %d on one point", len(list), datapath.MaxStack)
		}
		for _, name := range list {
			c, ok := t.cubes[name]
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
	// a cube attached to two points, one of them unchanged
	for _, point := range slices.Sorted(maps.Keys(t.Attachments)) {
		for _, name := range t.Attachments[point] {
			if other := seen[name]; other != point {
				return Conflict("attachments."+point, "%s is already attached to %s", name, other)
			}
		}
	}
	return nil
}

// affects reports whether the change can make an attachment point invalid:
// its stack changed, or a cube it names, its cube, or the cube peered with
// its interface changed.
func (v *validation) affects(point string, list []string) bool {
	if !slices.Equal(v.prev.Attachments[point], list) {
		return true
	}
	for _, name := range list {
		if v.changed[name] {
			return true
		}
	}
	if c, _, ok := strings.Cut(point, ":"); ok {
		return v.changed[c]
	}
	if owner, ok := v.ifacePeer(point); ok {
		c, _, _ := strings.Cut(owner, ":")
		return v.changed[c]
	}
	return false
}

// pointHook checks an attachment point exists and returns the hook that serves
// it ("" for an interface no cube is peered with: either hook will do).
func (t *Topology) pointHook(point string, v *validation) (datapath.Hook, error) {
	ep, err := ParseEndpoint(point)
	if err != nil {
		return "", Errorf("", "%v", err)
	}
	if !ep.IsCube() {
		if v.sys != nil && !v.sys.IfaceExists(ep.Iface) {
			return "", NotFound("", "no Linux interface named %q", ep.Iface)
		}
		if owner, ok := v.ifacePeer(ep.Iface); ok {
			oep, _ := ParseEndpoint(owner)
			return t.cubes[oep.Cube].Hook, nil
		}
		return "", nil
	}
	c, ok := t.cubes[ep.Cube]
	if !ok {
		return "", NotFound("", "no cube named %q", ep.Cube)
	}
	if c.Port(ep.Port) == nil {
		return "", NotFound("", "cube %s has no port %q", ep.Cube, ep.Port)
	}
	return c.Hook, nil
}
