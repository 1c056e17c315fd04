// Package tenant is edgenf's model of who owns what. The administrator
// declares tenants: the Linux interfaces each may use and its quotas. A
// request acts for an Actor (the administrator or one tenant); the checks
// here keep a tenant's change inside what it owns and within its quotas,
// and never tell it what other tenants have.
package tenant

import (
	"fmt"
	"slices"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
)

// Tenant is what the administrator gives one tenant. Cubes name their
// tenant; a tenant without a record owns no interface and has the default
// quotas.
type Tenant struct {
	Name string `json:"name" format:"name" doc:"the tenant's name, as on its tokens and cubes"`
	// Interfaces are the Linux interfaces the tenant's cubes may be peered
	// with, attached to and mirror to. (Slices add VLANs, prefixes and
	// TEID ranges beside them.)
	Interfaces []string `json:"interfaces,omitempty" format:"ifname" doc:"Linux interfaces the tenant's cubes may be peered with, attached to and mirror to; each is one tenant's (another tenant's: 409)"`
	// Quota overrides the default limits, one by one.
	Quota Quota `json:"quota,omitempty" doc:"limits that differ from the defaults"`
	// CubePrefix, if set, is the tenant's own part of the one namespace
	// of cube names: the tenant names the cubes it creates with it, and
	// no cube of anyone else may have a name that starts with it. A
	// tenant with a prefix cannot learn whether a name outside it exists
	// (its request is refused for the name alone).
	CubePrefix string `json:"cube_prefix,omitempty" pattern:"^[A-Za-z][A-Za-z0-9_-]{0,30}$" doc:"the start of the names of the tenant's cubes; no one else's cube may have a name that starts with it, and no other tenant's prefix may start with it or be the start of it, and it may not claim the names of the cubes of captures, capture-... (409)"`
}

// CaptureCubes starts the names of the cubes the daemon attaches for
// captures (after the cube prefix of a tenant that has one), so no
// tenant's prefix may claim them.
const CaptureCubes = "capture-"

// NamedIn reports whether a cube name is in the tenant's part of the
// namespace.
func (t *Tenant) NamedIn(name string) bool {
	return t != nil && t.CubePrefix != "" && strings.HasPrefix(name, t.CubePrefix)
}

// Overlaps reports whether two tenants' prefixes share names.
func (t *Tenant) Overlaps(o *Tenant) bool {
	return t.CubePrefix != "" && o.CubePrefix != "" && t.Name != o.Name &&
		(strings.HasPrefix(t.CubePrefix, o.CubePrefix) || strings.HasPrefix(o.CubePrefix, t.CubePrefix))
}

// Validate checks names and limits, and puts the interfaces in order.
func (t *Tenant) Validate() error {
	if err := cube.CheckName("name", t.Name); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, name := range t.Interfaces {
		ep, err := cube.ParseEndpoint(name)
		if err != nil || ep.IsCube() {
			return cube.Errorf(fmt.Sprintf("interfaces[%d]", i), "invalid interface name %q", name)
		}
		if seen[name] {
			return cube.Errorf(fmt.Sprintf("interfaces[%d]", i), "interface %s is listed twice", name)
		}
		seen[name] = true
	}
	slices.Sort(t.Interfaces)
	if t.CubePrefix != "" && cube.CheckName("cube_prefix", t.CubePrefix+"x") != nil {
		return cube.Errorf("cube_prefix", "%q: want a letter, then letters, digits, '-' or '_', at most 31 in all", t.CubePrefix)
	}
	if p := t.CubePrefix; p != "" && (strings.HasPrefix(p, CaptureCubes) || strings.HasPrefix(CaptureCubes, p)) {
		return cube.Conflict("cube_prefix", "%q would take the names of the cubes the daemon attaches for captures (%s...): every other capture would be refused", p, CaptureCubes)
	}
	return t.Quota.Validate()
}

// Clone returns a deep copy.
func (t *Tenant) Clone() *Tenant {
	n := *t
	n.Interfaces = slices.Clone(t.Interfaces)
	n.Quota = t.Quota.Clone()
	return &n
}

// Owns reports whether the interface was given to the tenant.
func (t *Tenant) Owns(iface string) bool {
	return t != nil && slices.Contains(t.Interfaces, iface)
}

// Actor is who a request acts for. The zero value owns nothing.
type Actor struct {
	name  string
	admin bool
}

// Admin is the administrator: every cube and interface.
var Admin = Actor{admin: true}

// Of is the actor of one tenant.
func Of(name string) Actor { return Actor{name: name} }

// IsAdmin reports whether the actor is the administrator.
func (a Actor) IsAdmin() bool { return a.admin }

// Name is the tenant's name ("" for the administrator).
func (a Actor) Name() string { return a.name }

// Owns reports whether the actor may see and change the cube.
func (a Actor) Owns(c *cube.Cube) bool {
	return c != nil && (a.admin || (a.name != "" && c.Tenant == a.name))
}

func (a Actor) String() string {
	if a.admin {
		return "administrator"
	}
	return "tenant " + a.name
}
