package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
)

// pfEntry mirrors struct pf_entry of the portfwd NF (forward in-port 0 to
// out-port 1).
type pfEntry struct {
	OutPort uint32
	Flags   uint16
	Action  uint16
	Src     [6]byte
	Dst     [6]byte
}

func init() {
	scenario.Register(scenario.Scenario{
		Name: "portfwd-xdp", Group: "portfwd", Quick: true, Param: 1, Reps: 15, // target 0.95: a thin margin
		Doc:   "one edgenf portfwd cube at XDP: a1 enters it directly (direct entry) → redirect to b0",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupChain(e, datapath.XDP, 1, 1) },
	})
	scenario.Register(scenario.Scenario{
		Name: "xdp-redirect", Group: "portfwd", Baseline: true, Quick: true,
		Doc:   "raw XDP redirect a1 → b0 (devmap), the ceiling",
		Setup: scenario.SetupXDPRedirect,
	})
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		for _, n := range []int{1, 2, 4, 5, 8} {
			hook, n := hook, n
			scenario.Register(scenario.Scenario{
				Name: fmt.Sprintf("chain%d-%s", n, hook), Group: "chain-" + string(hook), Baseline: n == 1,
				Quick: n == 1 || n == 4, Order: n, Param: float64(n),
				Doc:   fmt.Sprintf("%d portfwd cubes in a chain at %s", n, strings.ToUpper(string(hook))),
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupChain(e, hook, n, n) },
			})
		}
	}
	for _, n := range []int{1, 100, 1000, 10000} {
		n := n
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("cubes-%d", n), Group: "scale", Baseline: n == 1, Quick: n <= 100, Order: n, Param: float64(n),
			Doc: fmt.Sprintf("%d portfwd cubes loaded (one per tenant chain), traffic through the last one, XDP", n),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				if e.Quick && n > 100 {
					return nil, scenario.ErrSkip
				}
				return setupChain(e, datapath.XDP, n, 1)
			},
		})
	}
}

// setupChain loads total portfwd cubes into a fresh datapath; the last
// `chain` of them are chained port 1 → next cube's port 0; a1's entry program
// sends into the first cube of the chain, the last cube's port 1 is b0.
func setupChain(e *scenario.Env, hook datapath.Hook, total, chain int) (*scenario.Topology, error) {
	return setupChainTap(e, hook, total, chain, nil)
}

// setupChainTap is setupChain with tap, if set, called once the datapath is
// open: it may load cubes of its own (in slots from total on) and returns
// the transparent cubes to run on the hop between the chain's first two
// cubes.
func setupChainTap(e *scenario.Env, hook datapath.Hook, total, chain int, tap func(d *datapath.Datapath) ([]datapath.Transparent, error)) (*scenario.Topology, error) {
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
	obj, err := portfwd.Type.Object(hook)
	if err != nil {
		return nil, err
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		return nil, err
	}
	var stack []datapath.Transparent
	if tap != nil {
		if stack, err = tap(d); err != nil {
			return nil, err
		}
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	mem0 := memAvailable()
	t0 := time.Now()
	first := total - chain
	var entry *datapath.Program // the first cube of the chain: a1 enters it directly
	for i := range total {
		c, err := d.LoadCube(fmt.Sprintf("pf%d", i), hook, uint32(i), spec, nil)
		if err != nil {
			return nil, fmt.Errorf("cube %d: %w", i, err)
		}
		var st []datapath.Transparent
		if i == first {
			st = stack
		}
		if err := configure(c, i, first, total, p.B0Idx, st); err != nil {
			c.Close()
			return nil, err
		}
		// Pinned: the cube stays in the patch panel without our fds
		// (10,000 cubes would exceed the file descriptor limit).
		c.Close()
		if i == first {
			entry = c
		}
	}
	created := time.Since(t0)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	mem1 := memAvailable()
	if hook == datapath.TC {
		// a1 accepts the generator's redirected frames only with an XDP
		// program; frames then reach TCX ingress as skbs.
		if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil {
			return nil, err
		}
	}
	in, err := datapath.NewHop(datapath.DstCube, 0, uint32(first), 0, nil)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	if _, err := d.AttachStub(p.A1, p.A1Idx, hook, datapath.Ingress, in, entry); err != nil {
		return nil, err
	}
	peered := time.Since(t1)
	t := p.Topology(p.B1MAC)
	t.Info["hook"] = string(hook)
	// what peering a cube with an interface costs the datapath: the
	// first cube's direct entry loaded and linked there (XDP: the copy
	// machine linked at TCX ingress too), each link waiting for an RCU
	// grace period
	t.Info["peer"] = peered.Round(10 * time.Microsecond).String()
	if total > 1 || chain > 1 {
		t.Info["cubes"] = fmt.Sprint(total)
	}
	t.Info["create"] = fmt.Sprintf("%v (%v/cube)", created.Round(time.Millisecond), (created / time.Duration(total)).Round(time.Microsecond))
	if kb, n := cubeMemlock(root, 20); n > 0 {
		t.Info["kernel mem/cube"] = fmt.Sprintf("%.1f KiB (BPF memlock of its program and maps, mean of %d)", kb, n)
	}
	if mem0 > 0 && mem1 > 0 && total >= 1000 {
		t.Info["MemAvailable drop/cube"] = fmt.Sprintf("%.1f KiB (noisy: the machine is shared)", float64(mem0-mem1)/1024/float64(total))
	}
	if total >= 100 {
		t.Info["Go heap/cube"] = fmt.Sprintf("%.1f KiB", float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc))/1024/float64(total))
	}
	// Per-packet cost: the stub program (which resets the metadata) and
	// the chain behind it, with BPF_PROG_RUN.
	prog, err := datapath.AttachedProgram(root, p.A1, hook, datapath.Ingress)
	if err == nil {
		e.Defer(func() { prog.Close() })
		t.CostOn(prog)
	}
	return t, nil
}

// configure forwards port 0 to port 1 and, for cubes of the chain, peers
// port 1 with the next cube's port 0 (through stack), the last one with
// interface out.
func configure(c *datapath.Program, i, first, total, out int, stack []datapath.Transparent) error {
	m, err := c.Map("pf_table")
	if err != nil {
		return err
	}
	if err := m.Put(uint32(0), pfEntry{OutPort: 1, Flags: 1}); err != nil {
		return err
	}
	if i < first {
		return nil
	}
	var hop datapath.Hop
	if i+1 < total {
		hop, err = datapath.NewHop(datapath.DstCube, 0, uint32(i+1), 0, stack)
	} else {
		hop, err = datapath.NewHop(datapath.DstIface, uint32(out), 0, 0, nil)
	}
	if err != nil {
		return err
	}
	return c.SetHop(1, hop)
}

// cubeMemlock returns the mean kernel memory (BPF memlock) of the program
// and maps pinned for up to sample cubes under a datapath root, in KiB.
func cubeMemlock(root string, sample int) (float64, int) {
	dirs, _ := filepath.Glob(filepath.Join(root, "cubes", "*"))
	if len(dirs) > sample {
		dirs = dirs[:sample]
	}
	var sum uint64
	n := 0
	for _, d := range dirs {
		pins, _ := filepath.Glob(filepath.Join(d, "*"))
		var cube uint64
		for _, p := range pins {
			if m, err := ebpf.LoadPinnedMap(p, nil); err == nil {
				if info, err := m.Info(); err == nil {
					if v, ok := info.Memlock(); ok {
						cube += v
					}
				}
				m.Close()
			} else if pr, err := ebpf.LoadPinnedProgram(p, nil); err == nil {
				if info, err := pr.Info(); err == nil {
					if v, ok := info.Memlock(); ok {
						cube += v
					}
				}
				pr.Close()
			}
		}
		if cube > 0 {
			sum += cube
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / 1024 / float64(n), n
}

func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemAvailable:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "MemAvailable:")), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}
