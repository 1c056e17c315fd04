package engine

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Endpoints are the workloads (pods) the CNI plugin plugs into tenants'
// cubes. An endpoint is a port of the tenant's cube peered with the pod's
// interface, and the tenant's right to that interface: both are made by one
// change and removed by one change (one journal transaction: the port's
// cube and the endpoint, replayed together at start), and no other
// change may take the port apart while the endpoint exists. A declarative
// apply keeps them: the topology file describes the chains, the CNI plugin
// the pods plugged into them.

// Endpoints lists the endpoints who may see (a tenant: those of its cubes),
// by name.
func (e *Engine) Endpoints(who tenant.Actor) []*endpoint.Endpoint {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []*endpoint.Endpoint{}
	for _, name := range slices.Sorted(maps.Keys(e.endpoints)) {
		if ep := e.endpoints[name]; e.seesEndpoint(who, ep) {
			out = append(out, ep.Clone())
		}
	}
	return out
}

// Endpoint returns one endpoint if who may see it.
func (e *Engine) Endpoint(who tenant.Actor, name string) (*endpoint.Endpoint, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.endpoints[name]
	if !ok || !e.seesEndpoint(who, ep) {
		return nil, false
	}
	return ep.Clone(), true
}

func (e *Engine) seesEndpoint(who tenant.Actor, ep *endpoint.Endpoint) bool {
	return who.IsAdmin() || (who.Name() != "" && ep.Tenant == who.Name())
}

// AddEndpoint plugs a workload in (the administrator's operation): a port
// named like the endpoint on its cube, peered with its interface, and the
// interface given to the endpoint's tenant, in one change. The cube must be
// the tenant's; the port counts against the tenant's quota. Adding an
// endpoint that exists with the same content changes nothing (a retried
// CNI ADD); with other content it is a conflict. It reports whether the
// endpoint is new.
func (e *Engine) AddEndpoint(ep *endpoint.Endpoint) (bool, error) {
	ep = ep.Clone()
	if err := ep.Validate(); err != nil {
		return false, err
	}
	if e.prepareStub(ep) {
		created := false
		defer func() {
			if !created {
				e.dp.UnprepareStub(ep.Interface)
			}
		}()
		defer func() { created = e.hasEndpointOn(ep.Interface) }()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if old, ok := e.endpoints[ep.Name]; ok {
		same := old
		if len(ep.Gateways) == 0 { // the daemon chose them: a retry does not name them
			same = old.Clone()
			same.Gateways = nil
		}
		if same.Equal(ep) {
			return false, nil
		}
		return false, cube.Conflict("name", "endpoint %s exists (%s): delete it first", ep.Name, describe(old))
	}
	if err := e.knownTenant(ep.Tenant); err != nil {
		return false, err
	}
	c := e.topo.Lookup(ep.Cube)
	if c == nil {
		return false, cube.NotFound("cube", "no cube named %q", ep.Cube)
	}
	if c.Tenant != ep.Tenant {
		return false, cube.Conflict("cube", "cube %s is %s, not %s", ep.Cube, ownerName(c.Tenant), ownerName(ep.Tenant))
	}
	if typ, err := cube.Lookup(c.Type); err == nil && typ.Transparent {
		return false, cube.Errorf("cube", "cube %s is a %s, a transparent cube: it has no ports to plug a workload into", c.Name, c.Type)
	}
	if other, ok := e.endpointOn(ep.Interface); ok {
		return false, cube.Conflict("interface", "interface %s is endpoint %s's", ep.Interface, other.Name)
	}
	for _, name := range e.tenantNames() {
		if name != ep.Tenant && e.tenants.record(name).Owns(ep.Interface) {
			return false, cube.Conflict("interface", "interface %s is assigned to tenant %s", ep.Interface, name)
		}
	}
	// A pod's interface is new: nothing runs on it yet, and it is one end
	// of a veth pair, never the node's own link (which would hand the
	// tenant the node's network).
	if stack := e.topo.Attachments[ep.Interface]; len(stack) > 0 {
		return false, cube.Conflict("interface", "interface %s has %s attached: not a pod's new interface", ep.Interface, strings.Join(stack, ", "))
	}
	if l, err := netlink.LinkByName(ep.Interface); err == nil && l.Type() != "veth" {
		return false, cube.Errorf("interface", "interface %s is a %s link: an endpoint is the host end of a pod's veth pair", ep.Interface, l.Type())
	}
	next := e.workingCopy()
	if err := e.addEndpoint(next, ep); err != nil {
		e.recycle(next)
		return false, err
	}
	return true, nil
}

// addEndpoint is AddEndpoint's change, on a working copy.
func (e *Engine) addEndpoint(next *cube.Topology, ep *endpoint.Endpoint) error {
	if err := next.AddPort(ep.Cube, ep.Port()); err != nil {
		return cube.Within("cubes."+ep.Cube, err)
	}
	c, _ := next.Edit(ep.Cube)
	if err := plug(c, ep); err != nil {
		return err
	}
	d := e.dirtyOf(next)
	if ep.Tenant != "" {
		if err := e.checkQuota(tenant.Of(ep.Tenant), next, d); err != nil {
			return err
		}
	}
	if err := e.validate(next, d); err != nil {
		return err
	}
	if err := e.admit(next, d); err != nil { // the pod's chains against the core budget
		return err
	}
	e.putEndpoint(ep)
	if err := e.applyChange(next, d, []string{ep.Name}); err != nil {
		e.dropEndpoint(ep.Name)
		return err
	}
	return nil
}

// prepareStub readies the endpoint's interface for an XDP stub before the
// change takes the engine's lock (datapath.PrepareXDPStub), when the cube
// runs at XDP and the interface is a veth no endpoint has: the slow kernel
// attachments of many pods then overlap instead of queueing behind the
// lock. It reports whether it prepared anything.
func (e *Engine) prepareStub(ep *endpoint.Endpoint) bool {
	e.mu.Lock()
	c := e.topo.Lookup(ep.Cube)
	xdp := c != nil && c.Hook == datapath.XDP && e.cubes[ep.Cube] != nil && !e.hasEndpointOnLocked(ep.Interface)
	e.mu.Unlock()
	if !xdp {
		return false
	}
	l, err := netlink.LinkByName(ep.Interface)
	if err != nil || l.Type() != "veth" || l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached {
		return false
	}
	// a failure here is met again, and reported, by the change itself
	return e.dp.PrepareXDPStub(ep.Interface, l.Attrs().Index) == nil
}

func (e *Engine) hasEndpointOn(iface string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hasEndpointOnLocked(iface)
}

func (e *Engine) hasEndpointOnLocked(iface string) bool {
	_, ok := e.endpointOn(iface)
	return ok
}

// DeleteEndpoint removes what AddEndpoint made, in one change: the port
// (with the transparent cubes attached to it), the attachments on the
// interface, and the tenant's right to the interface.
func (e *Engine) DeleteEndpoint(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.endpoints[name]
	if !ok {
		return cube.NotFound("endpoint", "no endpoint named %q", name)
	}
	next := e.workingCopy()
	if err := e.deleteEndpoint(next, ep); err != nil {
		e.recycle(next)
		return err
	}
	return nil
}

// deleteEndpoint is DeleteEndpoint's change, on a working copy.
func (e *Engine) deleteEndpoint(next *cube.Topology, ep *endpoint.Endpoint) error {
	if c := next.Lookup(ep.Cube); c != nil && c.Port(ep.Name) != nil {
		if typ, err := cube.Lookup(c.Type); err == nil && typ.Unplug != nil {
			c, _ = next.Edit(ep.Cube)
			typ.Unplug(c, ep.Name)
		}
		if err := next.DeletePort(ep.Cube, ep.Name); err != nil {
			return err
		}
	}
	next.SetAttachments(ep.Interface, nil)
	d := e.dirtyOf(next)
	if err := e.validate(next, d); err != nil {
		return err
	}
	// judged, so that the check keeps up with the topology, but a pod
	// leaving is never refused: removing a port makes no chain dearer
	if err := e.admit(next, d); err != nil {
		e.log.Warn("admission check on an endpoint's removal", "endpoint", ep.Name, "err", err)
	}
	e.dropEndpoint(ep.Name)
	if err := e.applyChange(next, d, []string{ep.Name}); err != nil {
		e.putEndpoint(ep)
		return err
	}
	return nil
}

// checkEndpoints refuses a change that takes an endpoint's port apart:
// deletes its cube or port, re-peers the port, or moves the cube to
// another tenant. (A tenant reaches only its own cubes, whose endpoints
// are its own: the refusal tells it nothing about others.) Only the
// endpoints of the cubes that differ from the applied ones (d) are
// looked at: the others' ports are as they were, whole (the applied state
// keeps every endpoint's port); the first refusal is the full check's,
// endpoints being taken in name order either way.
func (e *Engine) checkEndpoints(next *cube.Topology, d dirty) error {
	eps := slices.Collect(maps.Values(e.endpoints))
	if !d.all {
		eps = e.endpointsOf(d.cubes)
	} else {
		slices.SortFunc(eps, func(a, b *endpoint.Endpoint) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, ep := range eps {
		c := next.Lookup(ep.Cube)
		field := "cubes." + ep.Cube
		switch {
		case c == nil:
			return cube.Conflict(field, "cube %s has endpoint %s (%s) plugged in: the workload must go first (CNI DEL, or DELETE /v1/endpoints/%s)", ep.Cube, ep.Name, describe(ep), ep.Name)
		case c.Tenant != ep.Tenant:
			return cube.Conflict(field+".tenant", "cube %s has endpoint %s (%s) plugged in: it stays %s while it does", ep.Cube, ep.Name, describe(ep), ownerName(ep.Tenant))
		}
		if p := c.Port(ep.Name); p == nil || p.Peer != ep.Interface {
			return cube.Conflict(fmt.Sprintf("%s.ports[%s]", field, ep.Name), "port %s:%s is endpoint %s (%s), peered with %s: it is removed with the endpoint (CNI DEL, or DELETE /v1/endpoints/%s)",
				ep.Cube, ep.Name, ep.Name, describe(ep), ep.Interface, ep.Name)
		}
	}
	return nil
}

// keepEndpoints puts the endpoints' ports, as they run, into a topology
// that replaces the whole state, where it lacks them; then checks that
// nothing else about them changes.
func (e *Engine) keepEndpoints(next *cube.Topology) error {
	for _, name := range slices.Sorted(maps.Keys(e.endpoints)) {
		ep := e.endpoints[name]
		c, running := next.Lookup(ep.Cube), e.topo.Lookup(ep.Cube)
		if c == nil || c.Tenant != ep.Tenant || c.Port(ep.Name) != nil || running == nil || running.Port(ep.Name) == nil {
			continue // checkEndpoints says what is wrong, if anything
		}
		p := *running.Port(ep.Name)
		p.Addresses = slices.Clone(p.Addresses)
		if c.PortByIndex(p.Index) != nil {
			p.Index = c.FreeIndex()
		}
		c.Ports = append(c.Ports, p)
		sort.SliceStable(c.Ports, func(i, j int) bool { return c.Ports[i].Index < c.Ports[j].Index })
		// and what the cube needs to reach the workload (a router's
		// host routes), with the gateways the workload has
		if err := plug(c, ep); err != nil {
			return err
		}
	}
	return e.checkEndpoints(next, dirty{all: true})
}

// plug readies the endpoint's port of c (next's copy) the way c's type
// routes (cube.Type.Plug) and records the gateways the workload got. A
// port of a layer-2 cube needs nothing.
func plug(c *cube.Cube, ep *endpoint.Endpoint) error {
	typ, err := cube.Lookup(c.Type)
	if err != nil || typ.Plug == nil {
		if len(ep.Gateways) > 0 {
			return cube.Errorf("gateways", "cube %s is a %s: a workload on it has no gateway of the cube's", c.Name, c.Type)
		}
		return nil
	}
	var addrs []netip.Prefix
	for _, a := range ep.Addresses {
		if pf, err := netip.ParsePrefix(a); err == nil {
			addrs = append(addrs, pf)
		}
	}
	var given []netip.Addr
	for _, g := range ep.Gateways {
		if a, err := netip.ParseAddr(g); err == nil {
			given = append(given, a)
		}
	}
	gws, err := typ.Plug(c, ep.Name, addrs, given)
	if err != nil {
		return cube.Within("cubes."+c.Name, err)
	}
	ep.Gateways = nil
	for _, g := range gws {
		ep.Gateways = append(ep.Gateways, g.String())
	}
	return nil
}

// endpointInterfaces lists the interfaces a tenant has through its
// endpoints.
func (e *Engine) endpointInterfaces(name string) []string {
	var out []string
	for n := range e.epIndex.byTenant[name] {
		out = append(out, e.endpoints[n].Interface)
	}
	return out
}

// withEndpoints is a tenant's record with the interfaces of its endpoints
// added (nil record and none: nil).
func (e *Engine) withEndpoints(name string, rec *tenant.Tenant) *tenant.Tenant {
	ifs := e.endpointInterfaces(name)
	if len(ifs) == 0 {
		return rec
	}
	r := &tenant.Tenant{Name: name}
	if rec != nil {
		r = rec.Clone()
	}
	r.Interfaces = append(r.Interfaces, ifs...)
	return r
}

// knownTenant refuses a tenant the daemon knows nothing of: no record and
// no cube ("": the administrator, always known).
func (e *Engine) knownTenant(name string) error {
	if name == "" || e.tenants.record(name) != nil {
		return nil
	}
	if cubes, _ := e.Holds(name); cubes > 0 {
		return nil
	}
	return cube.NotFound("tenant", "no tenant named %q: it has no record and no cube", name)
}

// tenantNames lists the tenants that have a record.
func (e *Engine) tenantNames() []string {
	names := slices.Collect(maps.Keys(e.tenants.static))
	for n := range e.tenants.declared {
		if _, dup := e.tenants.static[n]; !dup {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// restoreEndpoints adopts the endpoints of the state file whose ports the
// topology has; the others (a state file edited by hand) are dropped with a
// warning, so their interfaces are nobody's.
func (e *Engine) restoreEndpoints(saved map[string]*endpoint.Endpoint) {
	e.endpoints = map[string]*endpoint.Endpoint{}
	e.epIndex.reset()
	for name, ep := range saved {
		c := e.topo.Lookup(ep.Cube)
		if c == nil || c.Tenant != ep.Tenant || c.Port(ep.Name) == nil || c.Port(ep.Name).Peer != ep.Interface || ep.Validate() != nil {
			e.log.Warn("the state names an endpoint whose port it lacks; dropped", "endpoint", name, "cube", ep.Cube)
			continue
		}
		e.putEndpoint(ep)
	}
}

// describe names an endpoint's workload for messages.
func describe(ep *endpoint.Endpoint) string {
	switch {
	case ep.Pod != nil && ep.Pod.Name != "":
		return "pod " + ep.Pod.Namespace + "/" + ep.Pod.Name
	case ep.ContainerID != "":
		id := ep.ContainerID
		if len(id) > 12 {
			id = id[:12]
		}
		return "container " + id
	}
	return "interface " + ep.Interface
}

func ownerName(t string) string {
	if t == "" {
		return "the administrator's"
	}
	return "tenant " + t + "'s"
}
