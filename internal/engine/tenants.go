package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// tenantState is what the engine knows of tenants: their records, the
// default limits, and what it counts against their quotas.
type tenantState struct {
	// declared are the tenants the API declared (persisted in the state
	// file); static those of the token file, which win over them.
	declared map[string]*tenant.Tenant
	static   map[string]*tenant.Tenant
	defaults tenant.Quota
	// memory is the kernel memory an object preallocates, by its hash.
	memory map[[32]byte]int64
	// priced is how many cubes' kernel memory was priced for quotas
	// (index.go; a test's measure).
	priced int
	// now is every tenant's limits as of the last change of the
	// records, for what reads them without the engine's lock (publish).
	now atomic.Pointer[limitsNow]
}

// limitsNow is a copy of the records' limits and of the defaults.
type limitsNow struct {
	records  map[string]tenant.Quota
	defaults tenant.Quota
}

// publish copies the limits for limitNow. Called with the engine's lock
// held after every change of the records.
func (ts *tenantState) publish() {
	n := &limitsNow{records: map[string]tenant.Quota{}, defaults: ts.defaults}
	for _, t := range ts.records() {
		n.records[t.Name] = t.Quota
	}
	ts.now.Store(n)
}

// limitNow is limit without the engine's lock: as of the last publish.
func (ts *tenantState) limitNow(name, quota string) int64 {
	n := ts.now.Load()
	if v, ok := n.records[name][quota]; ok {
		return v
	}
	return n.defaults[quota]
}

func (ts *tenantState) init(cfg Config, declared map[string]*tenant.Tenant) error {
	ts.declared = map[string]*tenant.Tenant{}
	for name, t := range declared {
		ts.declared[name] = t
	}
	ts.static = map[string]*tenant.Tenant{}
	for i := range cfg.Tenants {
		t := cfg.Tenants[i].Clone()
		if err := t.Validate(); err != nil {
			return fmt.Errorf("tenants[%d]: %w", i, err)
		}
		if _, dup := ts.static[t.Name]; dup {
			return fmt.Errorf("tenant %s is declared twice", t.Name)
		}
		ts.static[t.Name] = t
	}
	if err := cfg.DefaultQuota.Validate(); err != nil {
		return fmt.Errorf("default_quota: %w", err)
	}
	ts.defaults = cfg.DefaultQuota.Over(tenant.Defaults)
	ts.memory = map[[32]byte]int64{}
	for _, t := range ts.records() {
		if err := ts.prefixFree(t); err != nil {
			return fmt.Errorf("tenant %s: %w", t.Name, err)
		}
	}
	// Token-file tenants that share an interface keep the daemon from
	// starting (the file is the administrator's to fix). Records the API
	// declared are checked as they are set: an older state file's are
	// let be, so that the daemon starts and they can be fixed.
	for _, t := range ts.static {
		if err := interfacesFree(t, slices.Collect(maps.Values(ts.static))); err != nil {
			return fmt.Errorf("tenant %s: %w", t.Name, err)
		}
	}
	ts.publish()
	return nil
}

// interfacesFree refuses a record that gives a tenant an interface another
// tenant has: each could then attach and capture at it, and see the other's
// traffic there; and the other's peering would be "in use" to it.
func interfacesFree(t *tenant.Tenant, records []*tenant.Tenant) error {
	for _, o := range records {
		if o.Name == t.Name {
			continue
		}
		for _, iface := range t.Interfaces {
			if o.Owns(iface) {
				return cube.Conflict("interfaces", "interface %s is tenant %s's: an interface is given to one tenant (both could attach and capture at it, each seeing the other's traffic)", iface, o.Name)
			}
		}
	}
	return nil
}

// records are the records of every tenant that has one.
func (ts *tenantState) records() []*tenant.Tenant {
	var out []*tenant.Tenant
	for name, t := range ts.declared {
		if _, ok := ts.static[name]; !ok {
			out = append(out, t)
		}
	}
	for _, t := range ts.static {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *tenant.Tenant) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// prefixFree refuses a record whose cube prefix shares names with another
// tenant's.
func (ts *tenantState) prefixFree(t *tenant.Tenant) error {
	for _, o := range ts.records() {
		if t.Overlaps(o) {
			return cube.Conflict("cube_prefix", "%q and tenant %s's cube prefix %q name the same cubes", t.CubePrefix, o.Name, o.CubePrefix)
		}
	}
	return nil
}

// checkNames keeps each tenant's cube prefix its own: a cube created, or
// given to another owner, whose name starts with a tenant's prefix must be
// that tenant's. A tenant is told only that the name is taken.
func (e *Engine) checkNames(who tenant.Actor, next *cube.Topology, changed []string) error {
	for _, name := range changed {
		c := next.Lookup(name)
		if c == nil {
			continue
		}
		if p := e.topo.Lookup(name); p != nil && p.Tenant == c.Tenant {
			continue
		}
		for _, t := range e.tenants.records() {
			if !t.NamedIn(name) || c.Tenant == t.Name {
				continue
			}
			if !who.IsAdmin() {
				return cube.Conflict("name", "the name %q is taken", name)
			}
			return cube.Conflict("cubes."+name, "names starting with %q are tenant %s's (its cube_prefix): its cubes only", t.CubePrefix, t.Name)
		}
	}
	return nil
}

// record is a tenant's record (nil: none; it owns no interface).
func (ts *tenantState) record(name string) *tenant.Tenant {
	if t, ok := ts.static[name]; ok {
		return t
	}
	return ts.declared[name]
}

// limit is one of a tenant's limits.
func (ts *tenantState) limit(name, quota string) int64 {
	if t := ts.record(name); t != nil {
		if v, ok := t.Quota[quota]; ok {
			return v
		}
	}
	return ts.defaults[quota]
}

func (e *Engine) scope(who tenant.Actor) tenant.Scope {
	if who.IsAdmin() {
		return tenant.Scope{Actor: who}
	}
	// a tenant also owns the interfaces of its endpoints (endpoints.go)
	return tenant.Scope{Actor: who, Record: e.withEndpoints(who.Name(), e.tenants.record(who.Name()))}
}

// Limit returns one of who's limits; the administrator has none (-1).
func (e *Engine) Limit(who tenant.Actor, quota string) int64 {
	if who.IsAdmin() {
		return -1
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tenants.limit(who.Name(), quota)
}

// UpdateAs is Update for who: a tenant may change only its own cubes and
// name only what it owns, within its quotas (tenant.Scope.Change). fn gets
// who's scope to check what a request names before it changes anything
// (so that a refusal never describes what others own). Slow preparation
// (P4 compiles) runs before the engine's lock is taken for the change,
// within who's compile time limit; fn then runs again on the state of that
// moment, so it must only derive the change from its arguments.
func (e *Engine) UpdateAs(ctx context.Context, who tenant.Actor, fn func(t *cube.Topology, s tenant.Scope) error) error {
	var release []func()
	defer func() {
		for _, r := range release {
			r()
		}
	}()
	prepared := map[string][]byte{} // cube → settings prepared
	peered := map[StubKey]bool{}    // interface programs prepared (stubprep.go)
	defer func() {
		if len(peered) > 0 {
			e.mu.Lock()
			e.dropPrepared(peered)
			e.mu.Unlock()
		}
	}()
	for attempt := 0; ; attempt++ {
		e.mu.Lock()
		next := e.workingCopy()
		if err := fn(next, e.scope(who)); err != nil {
			e.recycle(next)
			e.mu.Unlock()
			return err
		}
		d := e.dirtyOf(next)
		todo := e.unprepared(next, d.cubes, prepared)
		// Three rounds of preparing what another change made stale are
		// plenty; after that the validation compiles what is left.
		if len(todo) == 0 || attempt == 3 {
			var peer []stubPrep
			if attempt < 3 {
				peer = e.stubsToPrepare(next, d, peered)
			}
			if len(peer) > 0 {
				// judged before anything goes on an interface: a
				// change refused puts nothing anywhere
				if err := e.check(who, next, d); err != nil {
					e.recycle(next)
					e.mu.Unlock()
					return err
				}
				e.recycle(next)
				e.mu.Unlock()
				e.prepareStubs(peer, peered)
				continue
			}
			e.prepared = peered
			err := e.commit(who, next, d)
			e.prepared = nil
			if err != nil {
				e.recycle(next)
			}
			e.mu.Unlock()
			return err
		}
		limit := e.compileLimit(who)
		e.recycle(next)
		e.mu.Unlock()
		for _, c := range todo {
			rel, err := prepare(ctx, c, limit)
			if err != nil {
				return err
			}
			release = append(release, rel)
			prepared[c.Name] = c.Config
		}
	}
}

// unprepared lists the cubes of next (changed: those that differ from the
// applied ones) whose NF type prepares settings that differ from the
// applied ones and were not prepared yet.
func (e *Engine) unprepared(next *cube.Topology, changed []string, done map[string][]byte) []*cube.Cube {
	var out []*cube.Cube
	for _, name := range changed {
		c := next.Lookup(name)
		if c == nil {
			continue
		}
		typ, err := cube.Lookup(c.Type)
		if err != nil || typ.Prepare == nil {
			continue
		}
		if old := e.topo.Lookup(name); old != nil && old.Type == c.Type && bytes.Equal(old.Config, c.Config) {
			continue
		}
		if cfg, ok := done[name]; ok && bytes.Equal(cfg, c.Config) {
			continue
		}
		out = append(out, c.Clone())
	}
	return out
}

// adminCompileLimit bounds the administrator's compiles (and those of
// validation, at restore): generous, but a hung compiler is stopped.
const adminCompileLimit = 5 * time.Minute

func (e *Engine) compileLimit(who tenant.Actor) time.Duration {
	if who.IsAdmin() {
		return adminCompileLimit
	}
	return time.Duration(e.tenants.limit(who.Name(), tenant.CompileSeconds)) * time.Second
}

// prepare runs a cube's NF type's Prepare within limit; running out of
// time is a quota refusal.
func prepare(ctx context.Context, c *cube.Cube, limit time.Duration) (func(), error) {
	typ, _ := cube.Lookup(c.Type)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	rel, err := typ.Prepare(ctx, c)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, cube.Forbidden("quota."+tenant.CompileSeconds, "cubes.%s: the compile did not finish within the limit of %s (quota %s)",
				c.Name, limit, tenant.CompileSeconds)
		}
		return nil, cube.Within("cubes."+c.Name, err)
	}
	return rel, nil
}

// checkQuota refuses a change that takes who over a quota: next differs
// from the applied topology in d, and only that is counted (index.go).
func (e *Engine) checkQuota(who tenant.Actor, next *cube.Topology, d dirty) error {
	if who.IsAdmin() {
		return nil
	}
	name := who.Name()
	prev, now, err := e.usageChange(name, next, d)
	if err != nil {
		return err
	}
	limits := tenant.Quota{}
	for _, q := range tenant.Names {
		limits[q] = e.tenants.limit(name, q)
	}
	return tenant.Check(limits, prev, now)
}

// cubeMemory is the kernel memory a cube's maps preallocate (its loaded
// object's, or the one its settings select, sized for its settings).
func (e *Engine) cubeMemory(c *cube.Cube) (int64, error) {
	typ, err := cube.Lookup(c.Type)
	if err != nil {
		return 0, err
	}
	if l := e.cubes[c.Name]; l != nil && l.c != nil && l.c.Type == c.Type && l.dc.Hook == c.Hook && bytes.Equal(l.c.Config, c.Config) {
		if l.down != "" {
			return 0, nil // its program did not load (restore.go)
		}
		if m, ok := e.tenants.memory[memoryKey(typ, c, l.obj)]; ok {
			return m, nil
		}
	}
	obj, err := typ.ObjectOf(c)
	if err != nil {
		return 0, err
	}
	key := memoryKey(typ, c, sha256.Sum256(obj))
	if m, ok := e.tenants.memory[key]; ok {
		return m, nil
	}
	spec, err := e.spec(typ, c, obj)
	if err != nil {
		return 0, err
	}
	m := int64(datapath.PreallocBytes(spec))
	if len(e.tenants.memory) >= 4096 { // programs come and go: forget them all now and then
		clear(e.tenants.memory)
	}
	e.tenants.memory[key] = m
	return m, nil
}

// memoryKey names what a cube's kernel memory depends on: its object, and
// the settings that size its maps if its type sizes them per cube.
func memoryKey(typ *cube.Type, c *cube.Cube, obj [sha256.Size]byte) [sha256.Size]byte {
	if typ.SizeMaps == nil {
		return obj
	}
	return sha256.Sum256(append(obj[:], c.Config...))
}

// entryQuota refuses added more entries for who's tenant, which has used,
// beyond its quota.
func (e *Engine) entryQuota(who tenant.Actor, used, added int64) error {
	if who.IsAdmin() || added <= 0 {
		return nil
	}
	if limit := e.tenants.limit(who.Name(), tenant.TableEntries); used+added > limit {
		return tenant.Exceeded(tenant.TableEntries, limit, used, used+added)
	}
	return nil
}

func (e *Engine) entriesOf(name string) int64 {
	use, _ := e.usage(name, false)
	return use[tenant.TableEntries]
}

// --- the tenants resource ---

// TenantStatus is a tenant as the API shows it: its record, where the
// record comes from, and its usage against each quota.
type TenantStatus struct {
	tenant.Tenant
	// Source: "token-file" (read-only through the API), "api" or "none"
	// (named by a token or a cube, no record: defaults apply).
	Source string        `json:"source" doc:"token-file (change it there), api, or none (no record: no interfaces, default quotas)"`
	Quotas []QuotaStatus `json:"quotas"`
}

// QuotaStatus is one quota of a tenant.
type QuotaStatus struct {
	Name  string `json:"name"`
	Limit int64  `json:"limit"`
	// Used is absent for quotas on each request (compile time, body size).
	Used *int64 `json:"used,omitempty"`
}

// Tenant reports one tenant, as who may see it: the administrator any, a
// tenant itself.
func (e *Engine) Tenant(who tenant.Actor, name string) (*TenantStatus, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !who.IsAdmin() && who.Name() != name {
		return nil, cube.NotFound("tenant", "no tenant named %q", name)
	}
	return e.tenantStatus(name)
}

// Tenants reports every tenant that has a record or cubes, plus those
// named in extra (the token file's tenants), by name.
func (e *Engine) Tenants(extra ...string) ([]*TenantStatus, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := map[string]bool{}
	for _, n := range extra {
		names[n] = true
	}
	for n := range e.tenants.declared {
		names[n] = true
	}
	for n := range e.tenants.static {
		names[n] = true
	}
	for _, c := range e.topo.Cubes() {
		if c.Tenant != "" {
			names[c.Tenant] = true
		}
	}
	out := []*TenantStatus{}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		st, err := e.tenantStatus(n)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (e *Engine) tenantStatus(name string) (*TenantStatus, error) {
	st := &TenantStatus{Tenant: tenant.Tenant{Name: name}, Source: "none"}
	if t, ok := e.tenants.static[name]; ok {
		st.Tenant, st.Source = *t.Clone(), "token-file"
	} else if t, ok := e.tenants.declared[name]; ok {
		st.Tenant, st.Source = *t.Clone(), "api"
	}
	use, err := e.usage(name, true)
	if err != nil {
		return nil, err
	}
	for _, q := range tenant.Names {
		qs := QuotaStatus{Name: q, Limit: e.tenants.limit(name, q)}
		if u, ok := use[q]; ok {
			qs.Used = &u
		}
		st.Quotas = append(st.Quotas, qs)
	}
	return st, nil
}

// SetTenant creates or replaces a tenant's record (administrator only, in
// the API). It reports whether the tenant is new. A record of the token
// file cannot be changed here; taking away an interface a cube of the
// tenant still uses is a conflict.
func (e *Engine) SetTenant(t tenant.Tenant) (bool, error) {
	t = *t.Clone()
	if err := t.Validate(); err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.tenants.static[t.Name]; ok {
		return false, cube.Conflict("name", "tenant %s is declared in the token file: change it there", t.Name)
	}
	old, existed := e.tenants.declared[t.Name]
	if err := e.stillOwned(t.Name, old, &t); err != nil {
		return false, err
	}
	if err := e.tenants.prefixFree(&t); err != nil {
		return false, err
	}
	if err := interfacesFree(&t, e.tenants.records()); err != nil {
		return false, err
	}
	for _, name := range e.topo.CubeNames() {
		if t.NamedIn(name) && e.topo.Lookup(name).Tenant != t.Name {
			return false, cube.Conflict("cube_prefix", "cube %s, not tenant %s's, starts with %q", name, t.Name, t.CubePrefix)
		}
	}
	e.tenants.declared[t.Name] = &t
	if err := e.save(e.topo); err != nil {
		if existed {
			e.tenants.declared[t.Name] = old
		} else {
			delete(e.tenants.declared, t.Name)
		}
		return false, fmt.Errorf("persist state: %w", err)
	}
	e.rev++
	e.tenants.publish()
	e.rewritePuntBudgets(t.Name)
	return !existed, nil
}

// DeleteTenant removes a tenant's record: the tenant keeps its cubes but
// has the default quotas and no interface, which its cubes must not use.
func (e *Engine) DeleteTenant(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.tenants.static[name]; ok {
		return cube.Conflict("name", "tenant %s is declared in the token file: change it there", name)
	}
	old, ok := e.tenants.declared[name]
	if !ok {
		return cube.NotFound("tenant", "no tenant named %q has a record", name)
	}
	if err := e.stillOwned(name, old, nil); err != nil {
		return err
	}
	delete(e.tenants.declared, name)
	if err := e.save(e.topo); err != nil {
		e.tenants.declared[name] = old
		return fmt.Errorf("persist state: %w", err)
	}
	e.rev++
	e.tenants.publish()
	e.rewritePuntBudgets(name)
	return nil
}

// stillOwned refuses a new record (nil: none) that takes away an interface
// of the old one that the tenant's cubes use. (Interfaces the administrator
// wired a tenant's cubes to without giving them are not the tenant's to
// lose.)
func (e *Engine) stillOwned(name string, old, t *tenant.Tenant) error {
	for _, cn := range e.topo.CubeNames() {
		c := e.topo.Lookup(cn)
		if c.Tenant != name {
			continue
		}
		uses := []string{}
		for _, p := range c.Ports {
			if ep, err := cube.ParseEndpoint(p.Peer); err == nil && !ep.IsCube() {
				uses = append(uses, ep.Iface)
			}
		}
		if typ, err := cube.Lookup(c.Type); err == nil {
			uses = append(uses, typ.ConfigInterfaces(c)...)
		}
		for point, list := range e.topo.Attachments {
			if slices.Contains(list, cn) {
				if ep, err := cube.ParseEndpoint(point); err == nil && !ep.IsCube() {
					uses = append(uses, ep.Iface)
				}
			}
		}
		for _, iface := range uses {
			if old.Owns(iface) && !t.Owns(iface) {
				return cube.Conflict("interfaces", "cube %s of tenant %s uses interface %s: change the cube first", cn, name, iface)
			}
		}
	}
	return nil
}
