package scenarios

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/nf/lb"
)

// The lb group: one UDP service (DstIP:9, the generator's frames) with four
// backends of weights 1:2:3:4, all behind b0 (their addresses resolve to
// b1, the sink). Baseline: the same with kernel forwarding + nftables DNAT
// (conntrack), the usual Linux way.
var lbBackends = []string{"198.18.1.2", "198.18.1.3", "198.18.1.4", "198.18.1.5"}

func init() {
	scenario.Register(scenario.Scenario{
		Name: "nft-dnat-lb4", Group: "lb", Baseline: true, Quick: true,
		Doc: "kernel forwarding + nftables DNAT to 4 backends weighted 1:2:3:4 (numgen map, conntrack)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			p, err := e.NewPath(true)
			if err != nil {
				return nil, err
			}
			if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil {
				return nil, err
			}
			if err := p.Route(lbBackends[1:]...); err != nil {
				return nil, err
			}
			rules := fmt.Sprintf("table ip benchlb {\n chain pre {\n  type nat hook prerouting priority -100;\n"+
				"  ip daddr %s udp dport 9 dnat to numgen random mod 10 map { 0 : %s, 1-2 : %s, 3-5 : %s, 6-9 : %s }\n }\n}\n",
				scenario.DstIP, lbBackends[0], lbBackends[1], lbBackends[2], lbBackends[3])
			if err := p.Exec(rules, "nft", "-f", "-"); err != nil {
				return nil, err
			}
			t := p.Topology(p.A1MAC)
			t.Info["backends"] = "4 (1:2:3:4)"
			return t, nil
		},
	})
	for _, c := range []struct {
		mode string
		hook datapath.Hook
	}{{"nat", datapath.XDP}, {"dsr", datapath.XDP}, {"nat", datapath.TC}} {
		c := c
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("lb-%s-%s", c.mode, c.hook), Group: "lb", Quick: c.hook == datapath.XDP, Order: 10,
			Doc: fmt.Sprintf("edgenf lb cube at %s, %s mode, Maglev over 4 backends 1:2:3:4, connection table",
				map[datapath.Hook]string{datapath.XDP: "XDP", datapath.TC: "TC"}[c.hook], c.mode),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupLB(e, c.mode, c.hook) },
		})
	}
}

// benchEngine opens an engine (the daemon core) whose pins and state live
// under the scenario's own names, destroyed by Env.Close.
func benchEngine(e *scenario.Env) (*engine.Engine, string, error) {
	root := filepath.Join("/sys/fs/bpf", e.Lab.Prefix()+"-"+e.ID())
	dir, err := os.MkdirTemp("", "edgenf-bench-")
	if err != nil {
		return nil, "", err
	}
	eng, err := engine.Open(engine.Config{PinRoot: root, StateFile: filepath.Join(dir, "state.json"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	e.Defer(func() { eng.Destroy(); os.RemoveAll(dir) })
	return eng, root, nil
}

// stubCost measures the stub on iface (and the cubes behind it) per packet.
func stubCost(e *scenario.Env, t *scenario.Topology, root, iface string, hook datapath.Hook) {
	l, err := link.LoadPinnedLink(filepath.Join(root, "ifaces", fmt.Sprintf("%s_%s_ingress", iface, hook), "link"), nil)
	if err != nil {
		return
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return
	}
	prog, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		return
	}
	e.Defer(func() { prog.Close() })
	t.CostOn(prog)
}

func setupLB(e *scenario.Env, mode string, hook datapath.Hook) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	var bes []lb.Backend
	for i, a := range lbBackends {
		w := uint32(i + 1)
		bes = append(bes, lb.Backend{Name: fmt.Sprintf("be%d", i+1), Address: a, MAC: p.B1MAC.String(), Port: "out", Weight: &w})
	}
	svc, _ := json.Marshal(lb.Service{VIP: scenario.DstIP.String(), Protocol: "udp", Port: 9, Mode: mode, Backends: bes})
	t, err := build(eng, p, p.A1MAC, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "lb" + e.ID(), Type: "lb", Hook: hook,
			Ports: []cube.Port{{Name: "front", Index: 0, Peer: p.A1}, {Name: "out", Index: 1, Peer: p.B0}}}); err != nil {
			return err
		}
		_, err := tp.PutEntry("lb"+e.ID(), "services", svc)
		return err
	})
	if err != nil {
		return nil, err
	}
	t.Info["hook"] = string(hook)
	t.Info["mode"] = mode
	t.Info["backends"] = "4 (1:2:3:4), Maglev M=65537"
	stubCost(e, t, root, p.A1, hook)
	return t, nil
}
