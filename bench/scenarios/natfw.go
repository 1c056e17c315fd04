package scenarios

import (
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/nf/firewall"
	"github.com/edgenf/edgenf/internal/nf/nat"
	_ "github.com/edgenf/edgenf/internal/nf/router" // registers the router type
	"github.com/edgenf/edgenf/internal/tenant"
)

// The nat and firewall groups: an edgenf router (a1 → b0, route to DstNet via
// NextHop = b1) with a nat cube (masquerade on the router's b0 port) or a
// firewall cube (ingress chain on the router's a1 port), against the kernel
// doing the same: forwarding + nftables masquerade, forwarding + iptables /
// nftables rules.

const routerInMAC = "02:ee:00:00:00:01"

func init() {
	// Baselines re-registered as the reference of these groups.
	for _, b := range []struct{ name, group string }{
		{"nft-masq", "nat"}, {"ip-forward", "nat"},
		{"iptables-1000", "firewall"}, {"nft-1000", "firewall"}, {"iptables-100", "firewall"}, {"nft-100", "firewall"},
	} {
		s, ok := scenario.Get("baselines/" + b.name)
		if !ok {
			continue
		}
		s.Group, s.Baseline, s.Order = b.group, b.name == "nft-masq" || b.name == "iptables-1000", 0
		s.Quick = s.Baseline
		scenario.Register(s)
	}
	scenario.Register(scenario.Scenario{
		Name: "router-xdp", Group: "nat", Order: 5,
		Doc:   "edgenf router at XDP alone (the path the NAT rides on)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouterNF(e, datapath.XDP, "", 0) },
	})
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		hook := hook
		scenario.Register(scenario.Scenario{
			Name: "router-nat-" + string(hook), Group: "nat", Order: 10, Quick: hook == datapath.XDP,
			Doc:   fmt.Sprintf("edgenf router + nat (masquerade on the egress port, connection tracking) at %s", hook),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupRouterNF(e, hook, "nat", 0) },
		})
	}
	for _, n := range []int{10, 100, 1000, 10000} {
		n := n
		scenario.Register(scenario.Scenario{
			Name: fmt.Sprintf("fw-%d-xdp", n), Group: "firewall", Order: 10, Param: float64(n), Quick: n == 1000,
			Doc: fmt.Sprintf("edgenf router + firewall at XDP, ingress chain of %d non-matching rules (udp dport), conntrack", n),
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupRouterNF(e, datapath.XDP, "firewall", n)
			},
		})
	}
	scenario.Register(scenario.Scenario{
		Name: "fw-10000-mixed-xdp", Group: "firewall", Order: 20, Param: 10000,
		Doc: "edgenf router + firewall at XDP, 10000 rules built so that every bit-vector word has candidates in each field " +
			"but none matches (worst case for the summary words; tracked flows hit the verdict cache after their first packet, " +
			"the classifier's own cost is in docs/nf/firewall.md)",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupRouterNF(e, datapath.XDP, "firewall-mixed", 10000)
		},
	})
	scenario.Register(scenario.Scenario{
		Name: "fw-1000-tc", Group: "firewall", Order: 30, Param: 1000,
		Doc: "edgenf router + firewall at TC, 1000 non-matching rules",
		Setup: func(e *scenario.Env) (*scenario.Topology, error) {
			return setupRouterNF(e, datapath.TC, "firewall", 1000)
		},
	})
}

// FirewallRules makes n rules of the benchmark: "udp dport 10000+i drop"
// (like the iptables and nftables baselines), or with mixed, rules that each
// match the generated traffic in every field but one, alternating the field.
func FirewallRules(n int, mixed bool) []json.RawMessage {
	out := make([]json.RawMessage, 0, n)
	for i := 0; i < n; i++ {
		r := firewall.Rule{ID: i + 1, Proto: "udp", Dport: fmt.Sprint(10000 + i%50000), Action: "drop"}
		if mixed {
			// Traffic: 198.18.0.10-73 → 198.19.0.1, udp dport 9.
			if i%2 == 0 {
				r = firewall.Rule{ID: i + 1, Src: "198.18.0.0/24", Dst: fmt.Sprintf("198.19.%d.%d", 1+i/250%200, i%250), Proto: "udp", Dport: "9", Action: "drop"}
			} else {
				r = firewall.Rule{ID: i + 1, Src: fmt.Sprintf("198.18.%d.0/24", 2+i%200), Dst: "198.19.0.0/16", Proto: "udp", Dport: "1-100", Action: "drop"}
			}
		}
		b, _ := json.Marshal(r)
		out = append(out, b)
	}
	return out
}

func setupRouterNF(e *scenario.Env, hook datapath.Hook, nf string, n int) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	r := "r" + e.ID()
	t0 := time.Now()
	err = eng.Update(func(tp *cube.Topology) error {
		if err := addRouter(tp, r, hook, nil, p); err != nil {
			return err
		}
		if _, err := tp.PutEntry(r, "routes", json.RawMessage(fmt.Sprintf(`{"prefix":%q,"next_hop":%q}`, scenario.DstNet, scenario.NextHop))); err != nil {
			return err
		}
		switch nf {
		case "nat":
			if err := tp.AddCube(&cube.Cube{Name: "nat" + e.ID(), Type: "nat", Hook: hook, Config: json.RawMessage(`{"masquerade":true}`)}); err != nil {
				return err
			}
			return tp.Attach("nat"+e.ID(), r+":out", "last")
		case "firewall", "firewall-mixed":
			if err := tp.AddCube(&cube.Cube{Name: "fw" + e.ID(), Type: "firewall", Hook: hook}); err != nil {
				return err
			}
			return tp.Attach("fw"+e.ID(), r+":in", "last")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t := p.Topology(mustMAC(routerInMAC))
	t.Info["hook"] = string(hook)
	if nf == "firewall" || nf == "firewall-mixed" {
		rules := FirewallRules(n, nf == "firewall-mixed")
		t1 := time.Now()
		if err := eng.Update(func(tp *cube.Topology) error {
			for _, raw := range rules {
				if _, err := tp.PutEntry("fw"+e.ID(), "ingress", raw); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		t.Info["rules"] = fmt.Sprint(n)
		t.Info["bulk load"] = time.Since(t1).Round(time.Millisecond).String()
	}
	if nf == "nat" {
		if err := waitMasq(eng, "nat"+e.ID()); err != nil {
			return nil, err
		}
		t.Info["nat"] = "masquerade to " + scenario.B0IP
	}
	t.Info["setup"] = time.Since(t0).Round(time.Millisecond).String()
	if err := freeSink(p); err != nil {
		return nil, err
	}
	_ = root // no Program.Run cost: the router rewrites the frame, so repeats would not be alike
	return t, nil
}

func mustMAC(s string) net.HardwareAddr {
	hw, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return hw
}

func waitMasq(eng *engine.Engine, name string) error {
	for i := 0; i < 50; i++ {
		v, err := eng.View(tenant.Admin, name, "status")
		if err != nil {
			return err
		}
		if v.(nat.Status).MasqueradeAddress != "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("nat: no masquerade address after 5 s")
}
