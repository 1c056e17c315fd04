package scenario

import (
	"fmt"
	"strings"
)

// Rule counts of the firewall baselines.
func ruleCounts(quick bool) []int {
	if quick {
		return []int{100}
	}
	return []int{100, 1000}
}

func init() {
	Register(Scenario{
		Name: "xdp-redirect", Group: "baselines", Baseline: true, Quick: true,
		Doc:   "raw XDP redirect a1 → b0 (devmap), the ceiling",
		Setup: SetupXDPRedirect,
	})
	Register(Scenario{
		Name: "bridge", Group: "baselines", Quick: true, Order: 10,
		Doc:   "Linux bridge a1–b0, bridge-nf-call-iptables=1 (kernel default)",
		Setup: func(e *Env) (*Topology, error) { return setupBridge(e, true) },
	})
	Register(Scenario{
		Name: "bridge-nonf", Group: "baselines", Order: 11, Quick: true,
		Doc:   "Linux bridge a1–b0, bridge-nf-call-iptables=0",
		Setup: func(e *Env) (*Topology, error) { return setupBridge(e, false) },
	})
	Register(Scenario{
		Name: "ip-forward", Group: "baselines", Quick: true, Order: 20,
		Doc:   "kernel IPv4 forwarding a1 → b0, no netfilter rules",
		Setup: SetupIPForward,
	})
	for _, n := range ruleCounts(false) {
		n := n
		Register(Scenario{
			Name: fmt.Sprintf("iptables-%d", n), Group: "baselines", Order: 30, Param: float64(n), Quick: n == 100,
			Doc: fmt.Sprintf("kernel forwarding + iptables (nft backend) FORWARD chain of %d non-matching rules", n),
			Setup: func(e *Env) (*Topology, error) {
				return setupRouted(e, func(p *Path) error {
					var b strings.Builder
					b.WriteString("*filter\n:FORWARD ACCEPT [0:0]\n")
					for i := 0; i < n; i++ {
						fmt.Fprintf(&b, "-A FORWARD -p udp --dport %d -j DROP\n", 10000+i)
					}
					b.WriteString("COMMIT\n")
					return p.Exec(b.String(), "iptables-restore")
				})
			},
		})
		Register(Scenario{
			Name: fmt.Sprintf("nft-%d", n), Group: "baselines", Order: 40, Param: float64(n),
			Doc: fmt.Sprintf("kernel forwarding + nftables forward chain of %d non-matching rules (linear)", n),
			Setup: func(e *Env) (*Topology, error) {
				return setupRouted(e, func(p *Path) error {
					var b strings.Builder
					b.WriteString("table inet bench {\n chain filt {\n  type filter hook forward priority 0; policy accept;\n")
					for i := 0; i < n; i++ {
						fmt.Fprintf(&b, "  udp dport %d drop\n", 10000+i)
					}
					b.WriteString(" }\n}\n")
					return p.Exec(b.String(), "nft", "-f", "-")
				})
			},
		})
	}
	Register(Scenario{
		Name: "nft-set-1000", Group: "baselines", Order: 50, Param: 1000,
		Doc: "kernel forwarding + nftables: one rule matching a set of 1000 ports",
		Setup: func(e *Env) (*Topology, error) {
			return setupRouted(e, func(p *Path) error {
				var b strings.Builder
				b.WriteString("table inet bench {\n set ports { type inet_service; elements = { ")
				for i := 0; i < 1000; i++ {
					if i > 0 {
						b.WriteString(", ")
					}
					fmt.Fprintf(&b, "%d", 10000+i)
				}
				b.WriteString(" } }\n chain filt {\n  type filter hook forward priority 0; policy accept;\n  udp dport @ports drop\n }\n}\n")
				return p.Exec(b.String(), "nft", "-f", "-")
			})
		},
	})
	Register(Scenario{
		Name: "nft-masq", Group: "baselines", Order: 60, Quick: true,
		Doc: "kernel forwarding + nftables masquerade on b0 (conntrack)",
		Setup: func(e *Env) (*Topology, error) {
			return setupRouted(e, func(p *Path) error {
				return p.Exec("table ip bench {\n chain post {\n  type nat hook postrouting priority 100;\n  oifname \"b0\" masquerade\n }\n}\n", "nft", "-f", "-")
			})
		},
	})
	Register(Scenario{
		Name: "nft-dnat-lb", Group: "baselines", Order: 70,
		Doc: "kernel forwarding + nftables DNAT round robin to 2 backends (conntrack)",
		Setup: func(e *Env) (*Topology, error) {
			return setupRouted(e, func(p *Path) error {
				return p.Exec(fmt.Sprintf("table ip bench {\n chain pre {\n  type nat hook prerouting priority -100;\n  ip daddr %s udp dport 9 dnat to numgen inc mod 2 map { 0 : 198.18.1.2, 1 : 198.18.1.3 }\n }\n}\n", DstIP), "nft", "-f", "-")
			}, "198.18.1.3")
		},
	})
}

// ErrSkip is returned by Setup for a scenario that does not apply (e.g. in
// quick mode); the harness leaves it out.
var ErrSkip = fmt.Errorf("scenario: skipped")

// SetupXDPRedirect is the raw XDP redirect baseline: bench_fwd on a1
// redirects into b0 with a devmap.
func SetupXDPRedirect(e *Env) (*Topology, error) {
	p, err := e.NewPath(true)
	if err != nil {
		return nil, err
	}
	// b0 transmits into b1, whose XDP program (the sink) accepts it.
	if err := p.In(func() error { return e.Objs.SetFwdTarget(p.B0Idx) }); err != nil {
		return nil, err
	}
	if err := p.AttachXDP(e.Objs.Fwd, p.A1Idx); err != nil {
		return nil, err
	}
	t := p.Topology(p.B1MAC)
	t.CostOn(e.Objs.Fwd)
	return t, nil
}

func setupBridge(e *Env, brnf bool) (*Topology, error) {
	p, err := e.NewPath(true)
	if err != nil {
		return nil, err
	}
	if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil { // accept redirected frames
		return nil, err
	}
	v := "0"
	if brnf {
		v = "1"
	}
	for _, k := range []string{"iptables", "ip6tables", "arptables"} {
		if err := p.DUT.Sysctl("net.bridge.bridge-nf-call-"+k, v); err != nil {
			return nil, err
		}
	}
	if err := p.Exec("", "ip", "link", "add", "br0", "type", "bridge"); err != nil {
		return nil, err
	}
	for _, c := range [][]string{{"link", "set", "a1", "master", "br0"}, {"link", "set", "b0", "master", "br0"}, {"link", "set", "br0", "up"}} {
		if err := p.Exec("", "ip", c...); err != nil {
			return nil, err
		}
	}
	t := p.Topology(p.B1MAC)
	t.Info["bridge-nf-call-iptables"] = v
	return t, nil
}

// SetupIPForward is the kernel IPv4 forwarding baseline (a1 → b0, routed
// to DstNet via NextHop, no netfilter rules).
func SetupIPForward(e *Env) (*Topology, error) { return setupRouted(e, nil) }

func setupRouted(e *Env, extra func(*Path) error, extraHops ...string) (*Topology, error) {
	p, err := e.NewPath(true)
	if err != nil {
		return nil, err
	}
	if err := p.AttachXDP(e.Objs.Pass, p.A1Idx); err != nil {
		return nil, err
	}
	if err := p.Route(extraHops...); err != nil {
		return nil, err
	}
	if extra != nil {
		if err := extra(p); err != nil {
			return nil, err
		}
	}
	return p.Topology(p.A1MAC), nil
}
