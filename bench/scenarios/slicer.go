package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nf/slicer"
)

// The slicing speed rows of issue 15: what the classifier and policer cost
// in front of a chain, and whether it stays so with 1,000 slices.

func init() {
	for _, hook := range []datapath.Hook{datapath.TC, datapath.XDP} {
		hook := hook
		group := "slicer-" + string(hook)
		scenario.Register(scenario.Scenario{
			Name: "noslicer-" + string(hook), Group: group, Baseline: true, Quick: true,
			Doc:   fmt.Sprintf("one portfwd cube at %s, entered directly (the chain without a classifier)", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupChain(e, hook, 1, 1) },
		})
		scenario.Register(scenario.Scenario{
			Name: "slicer-" + string(hook), Group: group, Quick: true, Order: 1,
			Doc: fmt.Sprintf("a slicer at %s (one slice: a dst rule, a rate limit far above the load) in front of the same portfwd cube", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupSlices(e, hook, 1, 1, false)
			},
		})
		scenario.Register(scenario.Scenario{
			Name: "slicer-chain-" + string(hook), Group: group, Quick: true, Order: 2,
			Doc: fmt.Sprintf("the same at %s, the slice naming its chain entry (a `chain` slice: entered by its hop in enf_chain_hops, through the patch panel) instead of leading into it by a slicer port", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupSlices(e, hook, 1, 1, true)
			},
		})
	}
	for _, n := range []int{1, 1000} {
		n := n
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("slices-%d", n), Group: "slicer-scale", Baseline: n == 1, Quick: n == 1, Order: n, Param: float64(n),
			Doc: fmt.Sprintf("%d slices of 3 portfwd cubes each at TC (over 63 slices: one slicer whose slices name their chain entries, no port each), traffic through one", n),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupSlices(e, datapath.TC, n, 3, n > slicer.MaxPortSlices)
			},
		})
	}
}

// benchHandle lets the slicer's controller write its maps outside the
// daemon.
type benchHandle struct{ c *datapath.Program }

func (h benchHandle) Map(name string) (*ebpf.Map, error)    { return h.c.Map(name) }
func (h benchHandle) Inject(int, []byte) error              { return errors.ErrUnsupported }
func (h benchHandle) Transmit(int, []byte) error            { return errors.ErrUnsupported }
func (h benchHandle) PortIface(int) (*net.Interface, bool)  { return nil, false }
func (h benchHandle) PrepareRedirect(int) error             { return nil }
func (h benchHandle) AttachPoint() (string, []netip.Prefix) { return "", nil }
func (h benchHandle) Controller() cube.Controller           { return nil }
func (h benchHandle) Logf(string, ...any)                   {}

// slicerModel is a slicer whose slices s (0..len-1), with rules[i] as
// their rules, go out of port 1+i, or with chains into their chain
// entries (enf_chain_hops, by id 1+i).
func slicerModel(hook datapath.Hook, rules [][]slicer.Rule, rateBps uint64, chains bool) *cube.Cube {
	c := &cube.Cube{Name: "sl", Type: "slicer", Hook: hook, Config: json.RawMessage(`{"uplink":"up"}`),
		Ports: []cube.Port{{Name: "up", Index: 0}}, Tables: map[string]map[string]json.RawMessage{"slices": {}}}
	for i, r := range rules {
		name := fmt.Sprintf("s%d", i)
		sl := slicer.Slice{Name: name, ID: 1 + i, Rules: r, RateBps: rateBps}
		if chains {
			sl.Chain = fmt.Sprintf("pf%d:p0", i)
		} else {
			sl.Port = name
			c.Ports = append(c.Ports, cube.Port{Name: name, Index: 1 + i})
		}
		b, _ := json.Marshal(sl)
		c.Tables["slices"][name] = b
	}
	return c
}

// prefix26 is slice k's destination block: 198.19.0.0 + 64k, /26.
func prefix26(k int) string { return fmt.Sprintf("198.19.%d.%d/26", k*64>>8, k*64&0xff) }

// setupSlices builds n slices whose chains are chainLen portfwd cubes each,
// behind one slicer: with chains (needed beyond 63 slices) the slices name
// their chain entries (the hops the engine would write into enf_chain_hops
// are written here), without they lead into their chains through ports of
// the slicer. The generator's frames
// (198.19.0.1) belong to slice 0, whose chain ends at b0.
func setupSlices(e *scenario.Env, hook datapath.Hook, n, chainLen int, chains bool) (*scenario.Topology, error) {
	p, err := e.NewPath(false)
	if err != nil {
		return nil, err
	}
	root := filepath.Join("/sys/fs/bpf", e.Lab.Prefix()+"-"+e.ID())
	d, err := datapath.Open(root)
	if err != nil {
		return nil, err
	}
	e.Defer(func() { d.Destroy() })
	pfObj, _ := portfwd.Type.Object(hook)
	pfSpec, err := datapath.LoadSpec(pfObj)
	if err != nil {
		return nil, err
	}
	slObj, _ := slicer.Type.Object(hook)
	slSpec, err := datapath.LoadSpec(slObj)
	if err != nil {
		return nil, err
	}
	slot := uint32(0)
	t0 := time.Now()
	// loadSlicer loads a slicer with the given slices' rules and returns
	// its slot; next(i) is the hop of its slice i.
	loadSlicer := func(rules [][]slicer.Rule, next func(i int) (datapath.Hop, error)) (uint32, error) {
		s := slot
		slot++
		c, err := d.LoadCube(fmt.Sprintf("sl%d", s), hook, s, slSpec, nil)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		if err := slicer.Type.New().Sync(benchHandle{c}, slicerModel(hook, rules, 100e9, chains)); err != nil {
			return 0, fmt.Errorf("slicer sync: %w", err)
		}
		hops, err := c.Map(datapath.MapChainHops)
		if err != nil {
			return 0, err
		}
		for i := range rules {
			h, err := next(i)
			if err != nil {
				return 0, err
			}
			if chains {
				err = hops.Put(uint32(1+i), h)
			} else {
				err = c.SetHop(uint32(1+i), h)
			}
			if err != nil {
				return 0, err
			}
		}
		return s, nil
	}
	// chain loads a chain of portfwd cubes, the last one out of ifindex
	// out (0: unpeered), and returns the hop into it.
	chain := func(out int) (datapath.Hop, error) {
		first := slot
		for k := 0; k < chainLen; k++ {
			c, err := d.LoadCube(fmt.Sprintf("pf%d", slot), hook, slot, pfSpec, nil)
			if err != nil {
				return datapath.Hop{}, err
			}
			err = configure(c, int(slot), int(first), int(first)+chainLen, out, nil)
			c.Close()
			if err != nil {
				return datapath.Hop{}, err
			}
			slot++
		}
		return datapath.NewHop(datapath.DstCube, 0, first, 0, nil)
	}
	outOf := func(k int) int {
		if k == 0 {
			return p.B0Idx
		}
		return 0
	}
	rules := make([][]slicer.Rule, n)
	for k := range rules {
		rules[k] = []slicer.Rule{{Dst: prefix26(k)}}
	}
	top, err := loadSlicer(rules, func(i int) (datapath.Hop, error) { return chain(outOf(i)) })
	if err != nil {
		return nil, err
	}
	created := time.Since(t0)
	if hook == datapath.TC {
		if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil {
			return nil, err
		}
	}
	in, err := datapath.NewHop(datapath.DstCube, 0, top, 0, nil)
	if err != nil {
		return nil, err
	}
	entry, err := d.AdoptCube(fmt.Sprintf("sl%d", top), hook, top, slSpec)
	if err != nil {
		return nil, err
	}
	defer entry.Close()
	if _, err := d.AttachStub(p.A1, p.A1Idx, hook, datapath.Ingress, in, entry); err != nil {
		return nil, err
	}
	t := p.Topology(p.B1MAC)
	t.Info["hook"] = string(hook)
	t.Info["cubes"] = fmt.Sprintf("%d (%d slices, %d-cube chains)", slot, n, chainLen)
	t.Info["create"] = fmt.Sprintf("%v (%v/slice, kernel objects only: no engine)", created.Round(time.Millisecond), (created / time.Duration(n)).Round(time.Microsecond))
	stubCost(e, t, root, p.A1, hook)
	return t, nil
}
