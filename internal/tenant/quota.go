package tenant

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
)

// The quotas, by name (as in the token file, the API and error messages).
const (
	Cubes              = "cubes"
	Ports              = "ports"
	Attachments        = "attachments"
	TableEntries       = "table_entries"
	KernelMemory       = "kernel_memory_bytes"
	CompileSeconds     = "p4_compile_seconds"
	RequestBytes       = "request_body_bytes"
	ConcurrentRequests = "concurrent_requests"
	// PuntsPerSecond and PuntBurst are each of the tenant's cubes' punt
	// budget: the messages (punts, packet-ins, digests, copies the kernel
	// could not make) it may send to the slow path, which every cube
	// shares. The kernel drops those over it (punt_rate_drops).
	PuntsPerSecond = "punts_per_second"
	PuntBurst      = "punt_burst"
	// InjectsPerSecond and InjectBurst bound the frames the tenant sends
	// into the datapath through the API: REST inject, packet_out actions
	// and P4Runtime packet-outs (429, RESOURCE_EXHAUSTED over them).
	InjectsPerSecond = "injects_per_second"
	InjectBurst      = "inject_burst"
)

// Names lists the quotas in the order they are shown.
var Names = []string{Cubes, Ports, Attachments, TableEntries, KernelMemory, CompileSeconds, RequestBytes, ConcurrentRequests,
	PuntsPerSecond, PuntBurst, InjectsPerSecond, InjectBurst}

// Quota maps quota names to limits. A tenant's record holds the limits that
// differ from the defaults; Limits holds them all.
type Quota map[string]int64

// Defaults are the limits of a tenant whose record (or the token file's
// default_quota) does not say otherwise. They let a tenant run a small
// service chain: a ddos cube preallocates 110 MiB of maps, a firewall 32
// MiB, a router 9 MiB.
var Defaults = Quota{
	Cubes:              64,
	Ports:              256,
	Attachments:        64,
	TableEntries:       100_000,
	KernelMemory:       1 << 30,
	CompileSeconds:     30,
	RequestBytes:       8 << 20,
	ConcurrentRequests: 8,
	// a router's ARP and ND, a P4 controller's packet-ins: well below
	// what one reader takes from every cube (docs/tenants.md)
	PuntsPerSecond:   2000,
	PuntBurst:        200,
	InjectsPerSecond: 1000,
	InjectBurst:      100,
}

// The largest rates and bursts: a rate a second is at least a
// nanosecond apart in the kernel's budget, with room to spare.
const (
	MaxRate  = 10_000_000
	MaxBurst = 1_000_000
)

// Validate checks that every name is a quota and every limit is ≥ 0.
func (q Quota) Validate() error {
	for name, v := range q {
		if _, known := Defaults[name]; !known {
			return cube.Errorf("quota."+name, "unknown quota (quotas: %s)", strings.Join(Names, ", "))
		}
		if v < 0 {
			return cube.Errorf("quota."+name, "limit %d is negative", v)
		}
		switch name {
		case PuntsPerSecond, InjectsPerSecond:
			if v > MaxRate {
				return cube.Errorf("quota."+name, "limit %d a second is more than %d", v, MaxRate)
			}
		case PuntBurst, InjectBurst:
			if v == 0 {
				return cube.Errorf("quota."+name, "a burst of 0 lets nothing through: want at least 1 (a rate of 0 refuses everything)")
			}
			if v > MaxBurst {
				return cube.Errorf("quota."+name, "burst %d is more than %d", v, MaxBurst)
			}
		}
	}
	return nil
}

// Clone returns a copy.
func (q Quota) Clone() Quota {
	if q == nil {
		return nil
	}
	out := make(Quota, len(q))
	for k, v := range q {
		out[k] = v
	}
	return out
}

// Over returns the limits of q with base filling in the ones q leaves out.
func (q Quota) Over(base Quota) Quota {
	out := base.Clone()
	for k, v := range q {
		out[k] = v
	}
	return out
}

// Parse reads NAME=LIMIT (the CLI's --quota); sizes take K, M or G
// (binary) suffixes.
func Parse(s string) (string, int64, error) {
	name, val, ok := strings.Cut(s, "=")
	if !ok {
		return "", 0, fmt.Errorf("quota %q: want NAME=LIMIT (quotas: %s)", s, strings.Join(Names, ", "))
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(val, "K"):
		mult, val = 1<<10, strings.TrimSuffix(val, "K")
	case strings.HasSuffix(val, "M"):
		mult, val = 1<<20, strings.TrimSuffix(val, "M")
	case strings.HasSuffix(val, "G"):
		mult, val = 1<<30, strings.TrimSuffix(val, "G")
	}
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("quota %s: %q is not a non-negative integer", name, val)
	}
	q := Quota{name: n * mult}
	return name, n * mult, q.Validate()
}

// Usage is what a tenant holds, counted against the quotas of the same
// names (those that bound requests rather than holdings have none).
type Usage map[string]int64

// Exceeded is the error of a change that takes a tenant over a quota: it
// names the quota, its limit and the usage. It is refused with 403.
func Exceeded(name string, limit, used, wanted int64) error {
	return cube.Forbidden("quota."+name, "over quota %s: limit %d, in use %d, this change needs %d", name, limit, used, wanted)
}

// Check refuses a change from prev to next usage that takes a holding over
// its limit. A holding already over its limit (the limit was lowered, or
// the administrator made the change) may stay there or shrink.
func Check(limits Quota, prev, next Usage) error {
	for _, name := range Names {
		n, counted := next[name]
		if !counted {
			continue
		}
		if limit := limits[name]; n > limit && n > prev[name] {
			return Exceeded(name, limit, prev[name], n)
		}
	}
	return nil
}

// Count is a tenant's holdings in a topology; memory returns the kernel
// memory a cube preallocates.
func Count(t *cube.Topology, name string, memory func(*cube.Cube) (int64, error)) (Usage, error) {
	u := Usage{Cubes: 0, Ports: 0, Attachments: 0, TableEntries: 0, KernelMemory: 0}
	for _, c := range t.Cubes() {
		if c.Tenant != name {
			continue
		}
		u[Cubes]++
		u[Ports] += int64(len(c.Ports))
		for _, rows := range c.Tables {
			u[TableEntries] += int64(len(rows))
		}
		if memory != nil {
			m, err := memory(c)
			if err != nil {
				return nil, cube.Within("cubes."+c.Name, err)
			}
			u[KernelMemory] += m
		}
	}
	for _, list := range t.Attachments {
		for _, c := range list {
			if cb := t.Lookup(c); cb != nil && cb.Tenant == name {
				u[Attachments]++
			}
		}
	}
	return u, nil
}
