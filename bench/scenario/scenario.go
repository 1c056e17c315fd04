// Package scenario defines benchmark scenarios and their registry. A
// scenario builds a topology between two root-namespace veth ends: the one
// the generator redirects into and the one whose peer runs the sink. Adding
// a scenario is a Register call in an init function:
//
//	func init() {
//		scenario.Register(scenario.Scenario{
//			Name: "mynf", Group: "nf", Doc: "one mynf cube",
//			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
//				p, err := e.NewPath(false) // a0 → [a1 … b0] → b1 (sink)
//				if err != nil {
//					return nil, err
//				}
//				// … wire a1 to b0 through the NF …
//				return p.Topology(), nil
//			},
//		})
//	}
package scenario

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/bench/kern"
	"github.com/edgenf/edgenf/internal/netlab"
)

// Scenario is one measured configuration.
type Scenario struct {
	Name  string // unique within its group, short, e.g. "bridge", "portfwd-xdp"
	Group string // scenarios of a group are measured interleaved and compared
	// Baseline marks the group's reference: every other figure of the
	// group is reported as a ratio to it.
	Baseline bool
	Doc      string // one line for the report
	Quick    bool   // part of quick mode
	Order    int    // position in its group (then by name)
	// Param is an optional number plotted on the x axis of the group's
	// plot (rules, cubes, chain length); 0 if not applicable.
	Param float64
	// Reps, when above the run's, is the number of interleaved rounds of
	// the scenario's group (not in quick mode): more samples for the
	// medians of figures whose targets have thin margins.
	Reps  int
	Setup func(*Env) (*Topology, error)
}

var (
	regMu    sync.Mutex
	registry = map[string]Scenario{}
)

// Register adds a scenario; it panics on a duplicate group/name. A name may
// appear in several groups (a group's baseline is often another's too).
func Register(s Scenario) {
	regMu.Lock()
	defer regMu.Unlock()
	key := s.Group + "/" + s.Name
	if _, dup := registry[key]; dup || s.Name == "" || s.Setup == nil {
		panic("scenario: bad or duplicate scenario " + key)
	}
	registry[key] = s
}

// All returns the registered scenarios sorted by group, order, name.
func All() []Scenario {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]Scenario, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return groupRank(a.Group) < groupRank(b.Group) || (groupRank(a.Group) == groupRank(b.Group) && a.Group < b.Group)
		}
		if a.Baseline != b.Baseline {
			return a.Baseline
		}
		if a.Order != b.Order {
			return a.Order < b.Order
		}
		return a.Name < b.Name
	})
	return out
}

// GroupOrder lists well-known groups first in reports.
var GroupOrder = []string{"baselines", "portfwd", "chain-xdp", "chain-tc", "scale"}

func groupRank(g string) int {
	for i, x := range GroupOrder {
		if x == g {
			return i
		}
	}
	return len(GroupOrder)
}

// Get returns a scenario by "group/name", or the first (in report order)
// with that name.
func Get(name string) (Scenario, bool) {
	for _, s := range All() {
		if s.Group+"/"+s.Name == name || s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// Env is what a scenario's Setup gets.
type Env struct {
	Lab   *netlab.Lab
	Quick bool
	Ctx   context.Context
	// Objs holds the bench programs of this topology (bench_fwd, bench_pass);
	// the harness attaches the generator and the sink itself.
	Objs *kern.Objects

	id      string
	cleanup []func()
}

// NewEnv is used by the harness: id is a short unique tag (≤ 3 chars).
func NewEnv(ctx context.Context, lab *netlab.Lab, objs *kern.Objects, id string, quick bool) *Env {
	return &Env{Lab: lab, Quick: quick, Ctx: ctx, Objs: objs, id: id}
}

// ID is the scenario instance's short tag, for names.
func (e *Env) ID() string { return e.id }

// Defer registers a clean-up function, run in reverse order by Close.
func (e *Env) Defer(f func()) { e.cleanup = append(e.cleanup, f) }

// Close runs the clean-ups.
func (e *Env) Close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

// Topology is what Setup returns: where the harness generates and sinks.
type Topology struct {
	GenIfindex  int // root namespace: the generator redirects into it
	SinkIfindex int // root namespace: the sink XDP program is attached here
	Frame       kern.Frame
	// Cost, if set, returns the per-packet cost in ns of the scenario's
	// eBPF program(s) measured with Program.Run (Repeat).
	Cost func() (float64, error)
	// Info is reported as is (memory, creation time, settings).
	Info map[string]string
	// Handled, if set, counts the frames the device under test has taken
	// so far, for scenarios that drop instead of forwarding (a DDoS
	// mitigator): the rate is measured with it instead of the sink.
	Handled func() (uint64, error)
}

// Addressing of the standard path.
var (
	SrcNet  = net.IPv4(198, 18, 0, 0) // generator sources 198.18.0.10-73
	A1IP    = "198.18.0.1/24"
	B0IP    = "198.18.1.1/24"
	NextHop = "198.18.1.2"            // the sink side, static neighbour
	DstIP   = net.IPv4(198, 19, 0, 1) // destination of generated frames
	DstNet  = "198.19.0.0/16"
)

// Path is the standard topology: a0 (root) ↔ a1 … b0 ↔ b1 (root, sink).
// a1 and b0 are in DUT when the path has one, else in the root namespace.
type Path struct {
	env                        *Env
	DUT                        *netlab.Host // nil: a1, b0 in the root namespace
	A0, A1, B0, B1             string       // interface names (A1/B0 as seen in their namespace)
	A0Idx, A1Idx, B0Idx, B1Idx int
	A0MAC, A1MAC, B0MAC, B1MAC net.HardwareAddr
}

// Queues per veth: one ring per generating CPU.
const Queues = 2

// NewPath builds the standard path; with inNS, a1 and b0 live in a new
// namespace (the device under test) named "<prefix>-<id>".
func (e *Env) NewPath(inNS bool) (*Path, error) {
	l := e.Lab
	p := &Path{env: e}
	var err error
	if inNS {
		if p.DUT, err = l.Host(e.id); err != nil {
			return nil, err
		}
		if p.A0, err = l.VethQ(p.DUT, "a1", e.id+"a0", Queues); err != nil {
			return nil, err
		}
		if p.B1, err = l.VethQ(p.DUT, "b0", e.id+"b1", Queues); err != nil {
			return nil, err
		}
		p.A1, p.B0 = "a1", "b0"
	} else {
		if p.A0, p.A1, err = l.RootVethQ(e.id+"a0", e.id+"a1", Queues); err != nil {
			return nil, err
		}
		if p.B0, p.B1, err = l.RootVethQ(e.id+"b0", e.id+"b1", Queues); err != nil {
			return nil, err
		}
	}
	for _, x := range []struct {
		name string
		dut  bool
		idx  *int
		mac  *net.HardwareAddr
	}{{p.A0, false, &p.A0Idx, &p.A0MAC}, {p.A1, inNS, &p.A1Idx, &p.A1MAC}, {p.B0, inNS, &p.B0Idx, &p.B0MAC}, {p.B1, false, &p.B1Idx, &p.B1MAC}} {
		var lk netlink.Link
		if x.dut {
			lk, err = p.DUT.Netlink().LinkByName(x.name)
		} else {
			lk, err = netlink.LinkByName(x.name)
		}
		if err != nil {
			return nil, fmt.Errorf("scenario: %s: %w", x.name, err)
		}
		*x.idx, *x.mac = lk.Attrs().Index, lk.Attrs().HardwareAddr
	}
	return p, nil
}

// Topology returns the harness view of the path; frames are addressed to
// dstMAC (a1's MAC for routed paths, b1's for bridged or redirected ones).
func (p *Path) Topology(dstMAC net.HardwareAddr) *Topology {
	return &Topology{
		GenIfindex:  p.A0Idx,
		SinkIfindex: p.B1Idx,
		Frame:       kern.Frame{SrcMAC: p.A0MAC, DstMAC: dstMAC, SrcIP: SrcNet, DstIP: DstIP},
		Info:        map[string]string{},
	}
}

// In runs fn in the path's DUT namespace (or directly without one).
func (p *Path) In(fn func() error) error {
	if p.DUT == nil {
		return fn()
	}
	return p.DUT.Do(fn)
}

// AttachXDP attaches prog (native mode) to a DUT-side interface, detached by
// Env.Close.
func (p *Path) AttachXDP(prog *ebpf.Program, ifindex int) error {
	var lk link.Link
	err := p.In(func() error {
		var err error
		lk, err = kern.AttachXDP(prog, ifindex)
		return err
	})
	if err != nil {
		return err
	}
	p.env.Defer(func() { lk.Close() })
	return nil
}

// Route configures the DUT as an IPv4 router from a1 to b0: addresses,
// forwarding, a route to DstNet via NextHop whose MAC is b1's (and extra
// next hops, all resolving to b1).
func (p *Path) Route(extraHops ...string) error {
	if p.DUT == nil {
		return fmt.Errorf("scenario: routing needs a DUT namespace")
	}
	h := p.DUT
	if err := h.AddAddr(p.A1, A1IP); err != nil {
		return err
	}
	if err := h.AddAddr(p.B0, B0IP); err != nil {
		return err
	}
	if err := h.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	for _, nh := range append([]string{NextHop}, extraHops...) {
		if err := h.SetNeigh(p.B0, nh, p.B1MAC.String()); err != nil {
			return err
		}
	}
	_, dst, _ := net.ParseCIDR(DstNet)
	if err := h.Netlink().RouteAdd(&netlink.Route{Dst: dst, Gw: net.ParseIP(NextHop)}); err != nil {
		return fmt.Errorf("scenario: route: %w", err)
	}
	return nil
}

// Exec runs a command in the DUT namespace, feeding it input if not nil.
func (p *Path) Exec(input string, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(p.env.Ctx, 60*time.Second)
	defer cancel()
	var err error
	if input != "" {
		_, err = p.DUT.ExecInput(ctx, []byte(input), name, args...)
	} else {
		_, err = p.DUT.Exec(ctx, name, args...)
	}
	return err
}

// CostOn makes t's per-packet cost that of prog run on t's frame (ProgCost).
func (t *Topology) CostOn(prog *ebpf.Program) {
	t.Cost = func() (float64, error) {
		fr, err := t.Frame.Bytes()
		if err != nil {
			return 0, err
		}
		return ProgCost(prog, fr, 1_000_000)
	}
}

// ProgCost measures prog's cost per packet with BPF_PROG_RUN on frame, in
// ns: the median of batches of costBatch runs, repeat runs in all (at most
// costBatches batches). BPF_PROG_RUN repeats one buffer, so what a program
// writes stays for the next run: a router decrements the TTL each time, and
// a long run would soon measure the slow path of expired frames instead.
// Each batch starts again from frame.
func ProgCost(prog *ebpf.Program, frame []byte, repeat uint32) (float64, error) {
	n := min(max(int(repeat)/costBatch, 3), costBatches)
	ds := make([]float64, 0, n)
	for range n {
		_, d, err := prog.Benchmark(frame, costBatch, nil)
		if err != nil {
			return 0, err
		}
		ds = append(ds, float64(d.Nanoseconds()))
	}
	sort.Float64s(ds)
	return ds[len(ds)/2], nil
}

const (
	costBatch   = 32 // below any TTL the generator's frames carry
	costBatches = 4000
)

// Names lists registered names, for usage messages.
func Names() string {
	var n []string
	for _, s := range All() {
		n = append(n, s.Name)
	}
	return strings.Join(n, " ")
}
