package scenarios

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

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
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupLB(e, c.mode, c.hook, false) },
		})
	}
	// Group lb6: the same lb with an IPv6 VIP and backends (78-byte IPv6
	// frames) against itself over IPv4 (64-byte frames), at XDP; tunnel
	// mode's frames reach the sink inside IPv6-in-IPv6 (IPv4-in-IPv4).
	for _, c := range []struct {
		mode     string
		v6, base bool
	}{{"nat", false, true}, {"nat", true, false}, {"dsr", false, false}, {"dsr", true, false}, {"tunnel", false, false}, {"tunnel", true, false}} {
		c := c
		fam := map[bool]string{false: "4", true: "6"}[c.v6]
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("lb%s-%s-xdp", fam, c.mode), Group: "lb6", Baseline: c.base, Quick: c.mode == "nat", Order: 10,
			Doc:   fmt.Sprintf("edgenf lb cube at XDP, %s mode, IPv%s VIP and 4 backends 1:2:3:4", c.mode, fam),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupLB(e, c.mode, datapath.XDP, c.v6) },
		})
	}
}

// lbBackends6 are the IPv6 backends (behind b0, resolving to b1).
var lbBackends6 = []string{"2001:db8:b::2", "2001:db8:b::3", "2001:db8:b::4", "2001:db8:b::5"}

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
	prog, err := datapath.AttachedProgram(root, iface, hook, datapath.Ingress)
	if err != nil {
		return
	}
	e.Defer(func() { prog.Close() })
	t.CostOn(prog)
}

func setupLB(e *scenario.Env, mode string, hook datapath.Hook, v6 bool) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	var bes []lb.Backend
	addrs, vip := lbBackends, scenario.DstIP.String()
	if v6 {
		addrs, vip = lbBackends6, v6Dst.String()
	}
	for i, a := range addrs {
		w := uint32(i + 1)
		bes = append(bes, lb.Backend{Name: fmt.Sprintf("be%d", i+1), Address: a, MAC: p.B1MAC.String(), Port: "out", Weight: &w})
	}
	svc, _ := json.Marshal(lb.Service{VIP: vip, Protocol: "udp", Port: 9, Mode: mode, Backends: bes})
	var outAddrs []string
	if mode == "tunnel" {
		outAddrs = []string{"198.18.1.1/24", "2001:db8:b::1/64"} // the outer source
	}
	t, err := build(eng, p, p.A1MAC, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "lb" + e.ID(), Type: "lb", Hook: hook,
			Ports: []cube.Port{{Name: "front", Index: 0, Peer: p.A1}, {Name: "out", Index: 1, Peer: p.B0, Addresses: outAddrs}}}); err != nil {
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
	if v6 {
		if err := v6Frame(t, e); err != nil {
			return nil, err
		}
	}
	if mode != "tunnel" {
		// (not for tunnel mode: BPF_PROG_TEST_RUN's Repeat reruns the
		// program on the same buffer, each run pushing another outer
		// header until the headroom is gone, so the figure would be
		// mostly the refusal's)
		stubCost(e, t, root, p.A1, hook)
	}
	return t, nil
}
