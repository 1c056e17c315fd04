package engine

// The endpoints indexed by cube, tenant and interface, kept with them
// (putEndpoint, dropEndpoint): a change checks only the endpoints of the
// cubes it changed, and a tenant's scope, an endpoint's interface
// conflicts, take what they need without walking every endpoint.

import (
	"slices"

	"github.com/edgenf/edgenf/internal/endpoint"
)

type endpointIndex struct {
	byCube, byTenant map[string]map[string]bool // → endpoint names
	byIface          map[string]string          // interface → endpoint name
}

func (x *endpointIndex) reset() {
	x.byCube, x.byTenant, x.byIface = map[string]map[string]bool{}, map[string]map[string]bool{}, map[string]string{}
}

func setAdd(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

func setDrop(m map[string]map[string]bool, k, v string) {
	delete(m[k], v)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// putEndpoint makes ep one of the engine's endpoints.
func (e *Engine) putEndpoint(ep *endpoint.Endpoint) {
	e.dropEndpoint(ep.Name)
	x := &e.epIndex
	if x.byCube == nil {
		x.reset()
	}
	e.endpoints[ep.Name] = ep
	setAdd(x.byCube, ep.Cube, ep.Name)
	setAdd(x.byTenant, ep.Tenant, ep.Name)
	x.byIface[ep.Interface] = ep.Name
}

// dropEndpoint removes endpoint name, if the engine has it.
func (e *Engine) dropEndpoint(name string) {
	ep, ok := e.endpoints[name]
	if !ok {
		return
	}
	delete(e.endpoints, name)
	x := &e.epIndex
	setDrop(x.byCube, ep.Cube, name)
	setDrop(x.byTenant, ep.Tenant, name)
	if x.byIface[ep.Interface] == name {
		delete(x.byIface, ep.Interface)
	}
}

// endpointOn is the endpoint whose interface iface is, if any.
func (e *Engine) endpointOn(iface string) (*endpoint.Endpoint, bool) {
	name, ok := e.epIndex.byIface[iface]
	if !ok {
		return nil, false
	}
	return e.endpoints[name], true
}

// endpointsOf lists, by name, the endpoints plugged into the named cubes.
func (e *Engine) endpointsOf(cubes []string) []*endpoint.Endpoint {
	var names []string
	for _, c := range cubes {
		for name := range e.epIndex.byCube[c] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]*endpoint.Endpoint, len(names))
	for i, name := range names {
		out[i] = e.endpoints[name]
	}
	return out
}
