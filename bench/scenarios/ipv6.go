package scenarios

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/bench/kern"
	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/firewall"
)

// The firewall6 group: IPv6 frames (78 bytes, the smallest IPv6/UDP frame
// with the generator's payload) from 2001:db8:a::10-73 to 2001:db8:ff::1
// udp 9, through a firewall whose 1,000 rules (udp dport 10000+i drop) do
// not match. Baseline: kernel IPv6 forwarding + ip6tables with the same
// rules. edgenf: a portfwd cube (a1 → b0, a wire) with the firewall
// attached to its in-port (the IPv4 group's router adds its own cost; the
// wire keeps the comparison to the firewall).

var (
	v6Src     = net.ParseIP("2001:db8:a::")
	v6Dst     = net.ParseIP("2001:db8:ff::1")
	v6A1      = "2001:db8:a::1/64"
	v6B0      = "2001:db8:b::1/64"
	v6NextHop = "2001:db8:b::2"
	v6DstNet  = "2001:db8:ff::/48"
)

const fw6Rules = 1000

func init() {
	scenario.Register(scenario.Scenario{
		Name: fmt.Sprintf("ip6tables-%d", fw6Rules), Group: "firewall6", Baseline: true, Quick: true, Param: fw6Rules,
		Doc: fmt.Sprintf("kernel IPv6 forwarding + ip6tables (nft backend) FORWARD chain of %d non-matching rules", fw6Rules),
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupRouted6(e, func(p *scenario.Path) error {
				var b strings.Builder
				b.WriteString("*filter\n:FORWARD ACCEPT [0:0]\n")
				for i := 0; i < fw6Rules; i++ {
					fmt.Fprintf(&b, "-A FORWARD -p udp --dport %d -j DROP\n", 10000+i)
				}
				b.WriteString("COMMIT\n")
				return p.Exec(b.String(), "ip6tables-restore")
			})
		},
	})
	scenario.Register(scenario.Scenario{
		Name: "ip6-forward", Group: "firewall6", Order: 5,
		Doc:   "kernel IPv6 forwarding, no netfilter rules",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouted6(e, nil) },
	})
	// Group router6: IPv6 forwarding, edgenf router against the kernel.
	scenario.Register(scenario.Scenario{
		Name: "ip6-forward", Group: "router6", Baseline: true, Quick: true,
		Doc:   "kernel IPv6 forwarding a1 → b0, no netfilter rules",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouted6(e, nil) },
	})
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		hook := hook
		scenario.Register(scenario.Scenario{
			Name: "router6-" + string(hook), Group: "router6", Order: 10, Quick: hook == datapath.XDP,
			Doc:   fmt.Sprintf("edgenf router at %s forwarding IPv6 (LPM route, neighbour entry, hop limit)", strings.ToUpper(string(hook))),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouter6(e, hook) },
		})
	}
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		hook := hook
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("fw6-%d-%s", fw6Rules, hook), Group: "firewall6", Order: 10, Param: fw6Rules, Quick: hook == datapath.XDP,
			Doc: fmt.Sprintf("edgenf portfwd + firewall at %s, %d non-matching IPv6 rules (udp dport), conntrack",
				strings.ToUpper(string(hook)), fw6Rules),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupFirewall6(e, hook) },
		})
	}
}

func v6Frame(t *scenario.Topology, e *scenario.Env) error {
	t.Frame.SrcIP, t.Frame.DstIP = v6Src, v6Dst
	t.Info["frame"] = "IPv6/UDP, 78 bytes"
	return e.Objs.SetMode(kern.ModeV6, nil)
}

// setupRouted6 is the DUT namespace as an IPv6 router from a1 to b0.
func setupRouted6(e *scenario.Env, extra func(*scenario.Path) error) (*scenario.Topology, error) {
	p, err := e.NewPath(true)
	if err != nil {
		return nil, err
	}
	if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil {
		return nil, err
	}
	h := p.DUT
	for _, s := range [][2]string{{p.A1, v6A1}, {p.B0, v6B0}} {
		if err := h.AddAddr(s[0], s[1]); err != nil {
			return nil, err
		}
	}
	if err := h.Sysctl("net.ipv6.conf.all.forwarding", "1"); err != nil {
		return nil, err
	}
	if err := h.SetNeigh(p.B0, v6NextHop, p.B1MAC.String()); err != nil {
		return nil, err
	}
	_, dst, _ := net.ParseCIDR(v6DstNet)
	if err := h.Netlink().RouteAdd(&netlink.Route{Dst: dst, Gw: net.ParseIP(v6NextHop)}); err != nil {
		return nil, fmt.Errorf("route6: %w", err)
	}
	if extra != nil {
		if err := extra(p); err != nil {
			return nil, err
		}
	}
	t := p.Topology(p.A1MAC)
	return t, v6Frame(t, e)
}

func setupFirewall6(e *scenario.Env, hook datapath.Hook) (*scenario.Topology, error) {
	p, eng, _, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	pf, fw := "pf"+e.ID(), "fw"+e.ID()
	t0 := time.Now()
	t, err := build(eng, p, p.B1MAC, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: pf, Type: "portfwd", Hook: hook, Ports: []cube.Port{
			{Name: "p0", Index: 0, Peer: p.A1}, {Name: "p1", Index: 1, Peer: p.B0}}}); err != nil {
			return err
		}
		if _, err := tp.PutEntry(pf, "rules", json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: fw, Type: "firewall", Hook: hook}); err != nil {
			return err
		}
		for i := 0; i < fw6Rules; i++ {
			r, _ := json.Marshal(firewall.Rule{ID: i + 1, Family: "ipv6", Proto: "udp", Dport: fmt.Sprint(10000 + i), Action: "drop"})
			if _, err := tp.PutEntry(fw, "ingress", r); err != nil {
				return err
			}
		}
		return tp.Attach(fw, pf+":p0", "last")
	})
	if err != nil {
		return nil, err
	}
	t.Info["hook"] = string(hook)
	t.Info["rules"] = fmt.Sprint(fw6Rules)
	t.Info["setup"] = time.Since(t0).Round(time.Millisecond).String()
	return t, v6Frame(t, e)
}

// setupRouter6 is an edgenf router from a1 to b0 with the addressing of
// setupRouted6: a route to the destination net via the next hop, whose
// neighbour entry is b1's MAC.
func setupRouter6(e *scenario.Env, hook datapath.Hook) (*scenario.Topology, error) {
	p, eng, _, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	r := "r" + e.ID()
	t, err := build(eng, p, mustMAC(routerInMAC), func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: r, Type: "router", Hook: hook, Ports: []cube.Port{
			{Name: "in", Index: 0, Peer: p.A1, MAC: routerInMAC, Addresses: []string{v6A1}},
			{Name: "out", Index: 1, Peer: p.B0, Addresses: []string{v6B0}},
		}}); err != nil {
			return err
		}
		if _, err := tp.PutEntry(r, "arp", json.RawMessage(fmt.Sprintf(`{"ip":%q,"mac":%q}`, v6NextHop, p.B1MAC))); err != nil {
			return err
		}
		_, err := tp.PutEntry(r, "routes", json.RawMessage(fmt.Sprintf(`{"prefix":%q,"next_hop":%q}`, v6DstNet, v6NextHop)))
		return err
	})
	if err != nil {
		return nil, err
	}
	t.Info["hook"] = string(hook)
	return t, v6Frame(t, e)
}
