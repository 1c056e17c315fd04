package firewall

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

const (
	in  = datapath.Ingress
	out = datapath.Egress
)

func fwModel(hook datapath.Hook, cfg *Config, ingress, egress []Rule) *cube.Cube {
	c := &cube.Cube{Name: "fw", Type: "firewall", Hook: hook, Tables: map[string]map[string]json.RawMessage{}}
	if cfg != nil {
		c.Config = nftest.Entry(cfg)
	}
	for name, rules := range map[string][]Rule{"ingress": ingress, "egress": egress} {
		if len(rules) == 0 {
			continue
		}
		c.Tables[name] = map[string]json.RawMessage{}
		for _, r := range rules {
			c.Tables[name][strconv.Itoa(r.ID)] = nftest.Entry(r)
		}
	}
	return c
}

type verdicts struct{ pass, drop uint32 }

var hookVerdicts = map[datapath.Hook]verdicts{
	datapath.XDP: {datapath.XDPRedirect, datapath.XDPDrop},
	datapath.TC:  {datapath.TCActRedirect, datapath.TCActShot},
}

func eth() *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: nftest.MAC("02:00:00:00:00:01"), DstMAC: nftest.MAC("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
}

func ip(src, dst string, p layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, TTL: 64, Protocol: p, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
}

func tcp(src, dst string, sport, dport uint16, flags string) []byte {
	t := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Window: 1024}
	for _, f := range flags {
		switch f {
		case 'S':
			t.SYN = true
		case 'A':
			t.ACK = true
		case 'F':
			t.FIN = true
		case 'R':
			t.RST = true
		case 'P':
			t.PSH = true
		case 'U':
			t.URG = true
		}
	}
	return nftest.Serialize(eth(), ip(src, dst, layers.IPProtocolTCP), t)
}

func udp(src, dst string, sport, dport uint16) []byte {
	return nftest.UDP4(src, dst, sport, dport, []byte("x"))
}

func icmp(src, dst string, typ, code uint8, id uint16) []byte {
	return nftest.Serialize(eth(), ip(src, dst, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code), Id: id, Seq: 1}, gopacket.Payload([]byte("abcd")))
}

// icmpErr builds an ICMP error from router about a packet orig (a frame).
func icmpErr(router, dst string, typ, code uint8, orig []byte) []byte {
	inner := orig[14 : 14+28]
	return nftest.Serialize(eth(), ip(router, dst, layers.IPProtocolICMPv4),
		&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)}, gopacket.Payload(inner))
}

type step struct {
	dir   datapath.Direction
	frame []byte
	pass  bool
}

func runSteps(t *testing.T, r *nftest.Rig, v verdicts, steps []step) {
	t.Helper()
	for i, s := range steps {
		res := r.RunTransparent(s.dir, s.frame)
		want := v.drop
		if s.pass {
			want = v.pass
		}
		if res.Verdict != want {
			t.Fatalf("step %d (%s %s): verdict %d, want pass=%v", i, s.dir, describe(s.frame), res.Verdict, s.pass)
		}
	}
}

func counts(t *testing.T, r *nftest.Rig) map[string]RuleCounter {
	t.Helper()
	cs, err := ruleCounters(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]RuleCounter{}
	for _, c := range cs {
		out[fmt.Sprintf("%s/%d", c.Chain, c.ID)] = c
	}
	return out
}

// TestEachRuleField: one rule per field, each checked with a packet that
// matches only that field and one that does not, with per-rule counters exact.
func TestEachRuleField(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			rules := []Rule{
				{ID: 10, Src: "198.18.5.0/24", Action: "accept"},
				{ID: 20, Dst: "198.19.7.7", Action: "accept"},
				{ID: 30, Proto: "udp", Dport: "1000-2000", Action: "accept"},
				{ID: 40, Proto: "tcp", Sport: "443", Action: "accept"},
				{ID: 50, Proto: "tcp", TCPFlags: "SYN,!ACK", Dport: "22", Action: "accept"},
				{ID: 60, Proto: "icmp", Action: "accept"},
				{ID: 70, Proto: "47", Action: "accept"},
			}
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop"}, rules, nil))
			frame := func(f []byte) []byte { return f }
			steps := []step{
				{in, udp("198.18.5.9", "198.19.0.1", 1, 1), true},           // 10
				{in, udp("198.18.6.9", "198.19.0.1", 1, 1), false},          // policy
				{in, udp("198.18.6.9", "198.19.7.7", 1, 1), true},           // 20
				{in, udp("198.18.6.9", "198.19.7.8", 9, 1500), true},        // 30
				{in, udp("198.18.6.9", "198.19.7.8", 9, 2001), false},       // policy
				{in, tcp("198.18.6.9", "198.19.7.8", 9, 1500, "S"), false},  // 30 is udp only
				{in, tcp("198.18.6.9", "198.19.7.8", 443, 9, "S"), true},    // 40
				{in, tcp("198.18.6.9", "198.19.7.8", 444, 22, "S"), true},   // 50
				{in, tcp("198.18.6.9", "198.19.7.8", 445, 22, "SA"), false}, // 50 needs !ACK
				{in, icmp("198.18.6.9", "198.19.7.8", 8, 0, 1), true},       // 60
				{in, frame(gre("198.18.6.9", "198.19.7.8")), true},          // 70
			}
			runSteps(t, r, v, steps)
			c := counts(t, r)
			want := map[string]uint64{"ingress/10": 1, "ingress/20": 1, "ingress/30": 1, "ingress/40": 1, "ingress/50": 1,
				"ingress/60": 1, "ingress/70": 1, "ingress/0": 4, "egress/0": 0}
			for k, n := range want {
				if c[k].Packets != n {
					t.Errorf("%s: %d packets, want %d (all %v)", k, c[k].Packets, n, c)
				}
			}
			if c["ingress/10"].Bytes != uint64(len(steps[0].frame)) {
				t.Errorf("bytes %d, want %d", c["ingress/10"].Bytes, len(steps[0].frame))
			}
			// Egress has no rules and the default accept.
			runSteps(t, r, v, []step{{out, udp("198.18.6.9", "198.19.0.1", 1, 1), true}})
		})
	}
}

func gre(src, dst string) []byte {
	return nftest.Serialize(eth(), ip(src, dst, layers.IPProtocolGRE), gopacket.Payload([]byte{0, 0, 0x08, 0, 1, 2, 3, 4}))
}

// TestFirstMatchByID: overlapping rules, the lowest id wins whatever the
// insertion order.
func TestFirstMatchByID(t *testing.T) {
	rules := []Rule{
		{ID: 300, Action: "accept"},
		{ID: 200, Src: "198.18.0.0/16", Action: "drop"},
		{ID: 100, Src: "198.18.1.0/24", Proto: "udp", Action: "accept"},
	}
	r := nftest.New(t, Type, fwModel(datapath.XDP, nil, rules, nil))
	runSteps(t, r, hookVerdicts[datapath.XDP], []step{
		{in, udp("198.18.1.1", "198.19.0.1", 1, 1), true},
		{in, tcp("198.18.1.1", "198.19.0.1", 1, 1, "S"), false},
		{in, udp("198.18.2.1", "198.19.0.1", 1, 1), false},
		{in, udp("198.20.2.1", "198.19.0.1", 1, 1), true},
	})
	c := counts(t, r)
	if c["ingress/100"].Packets != 1 || c["ingress/200"].Packets != 2 || c["ingress/300"].Packets != 1 {
		t.Fatalf("counters %v", c)
	}
}

// TestConntrackStates: state new / established / related / invalid each
// match their rules; TCP goes through its states.
func TestConntrackStates(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			// Egress: new connections to port 80 and established; ingress:
			// established and related only (invalid dropped explicitly).
			egress := []Rule{
				{ID: 1, State: "invalid", Action: "drop"},
				{ID: 2, Proto: "tcp", Dport: "80", State: "new", Action: "accept"},
				{ID: 3, Proto: "udp", State: "new", Action: "accept"},
				{ID: 4, Proto: "icmp", State: "new", Action: "accept"},
				{ID: 5, State: "established", Action: "accept"},
			}
			ingress := []Rule{
				{ID: 1, State: "established,related", Action: "accept"},
				{ID: 2, State: "invalid", Action: "drop"},
			}
			r := nftest.New(t, Type, fwModel(hook, &Config{IngressPolicy: "drop", EgressPolicy: "drop"}, ingress, egress))
			syn := tcp("198.18.1.2", "198.19.0.1", 40000, 80, "S")
			runSteps(t, r, v, []step{
				{in, tcp("198.19.0.1", "198.18.1.2", 80, 40000, "SA"), false}, // no connection: invalid
				{out, tcp("198.18.1.2", "198.19.0.1", 40000, 81, "S"), false}, // new, not port 80
				{out, tcp("198.18.1.2", "198.19.0.1", 40000, 80, "A"), false}, // invalid: no SYN
				{out, syn, true},
				{out, syn, true}, // retransmission: still new
				{in, tcp("198.19.0.1", "198.18.1.2", 80, 40000, "SA"), true},
				{out, tcp("198.18.1.2", "198.19.0.1", 40000, 80, "A"), true},
				{out, tcp("198.18.1.2", "198.19.0.1", 40000, 80, "PA"), true},
				{in, tcp("198.19.0.1", "198.18.1.2", 80, 40000, "A"), true},
				{in, tcp("198.19.0.1", "198.18.1.2", 81, 40000, "A"), false},                                    // other port: invalid
				{in, icmpErr("198.19.0.254", "198.18.1.2", 3, 4, syn), true},                                    // related (frag needed)
				{in, icmpErr("198.19.0.254", "198.18.1.2", 3, 4, udp("198.18.1.2", "198.19.0.9", 5, 5)), false}, // unrelated: invalid
				{out, udp("198.18.1.2", "198.19.0.1", 5000, 53), true},
				{in, udp("198.19.0.1", "198.18.1.2", 53, 5000), true},
				{in, udp("198.19.0.1", "198.18.1.2", 53, 5001), false}, // new inbound: policy
				{out, icmp("198.18.1.2", "198.19.0.1", 8, 0, 7), true},
				{in, icmp("198.19.0.1", "198.18.1.2", 0, 0, 7), true},
				{in, icmp("198.19.0.1", "198.18.1.2", 0, 0, 8), false},        // reply without request: invalid
				{in, tcp("198.19.0.1", "198.18.1.2", 80, 40000, "SF"), false}, // impossible flags
			})
			conns, err := connections(r.Handle())
			if err != nil {
				t.Fatal(err)
			}
			states := map[string]string{}
			for _, c := range conns {
				states[c.Proto+" "+c.Src+" "+c.Dst] = c.State
			}
			if states["tcp 198.18.1.2:40000 198.19.0.1:80"] != "established" || states["udp 198.18.1.2:5000 198.19.0.1:53"] != "udp-replied" ||
				states["icmp 198.18.1.2 id 7 198.19.0.1"] != "icmp" {
				t.Fatalf("connections %v", states)
			}
			// FIN both ways, then RST: time-wait then close.
			runSteps(t, r, v, []step{
				{out, tcp("198.18.1.2", "198.19.0.1", 40000, 80, "FA"), true},
				{in, tcp("198.19.0.1", "198.18.1.2", 80, 40000, "FA"), true},
			})
			conns, _ = connections(r.Handle())
			for _, c := range conns {
				if c.Proto == "tcp" && c.State != "time-wait" {
					t.Fatalf("after FINs: %+v", c)
				}
			}
			c := counts(t, r)
			if c["egress/1"].Packets != 1 || c["ingress/2"].Packets != 5 || c["ingress/0"].Packets != 1 || c["egress/0"].Packets != 1 {
				t.Fatalf("counters %v", c)
			}
		})
	}
}

// TestAcceptEstablished: with the switch on, only outbound connections are
// allowed by rules; their return traffic passes, unsolicited inbound does not.
func TestAcceptEstablished(t *testing.T) {
	r := nftest.New(t, Type, fwModel(datapath.XDP, &Config{IngressPolicy: "drop", AcceptEstablished: true}, nil,
		[]Rule{{ID: 1, Proto: "tcp", Dport: "22", Action: "drop"}}))
	v := hookVerdicts[datapath.XDP]
	runSteps(t, r, v, []step{
		{in, tcp("198.19.0.1", "198.18.1.2", 5555, 22, "S"), false},
		{out, tcp("198.18.1.2", "198.19.0.1", 40000, 22, "S"), false},
		{out, tcp("198.18.1.2", "198.19.0.1", 40001, 80, "S"), true},
		{in, tcp("198.19.0.1", "198.18.1.2", 80, 40001, "SA"), true},
		{in, tcp("198.19.0.1", "198.18.1.2", 80, 40001, "A"), true},
		{in, tcp("198.19.0.1", "198.18.1.2", 80, 40002, "A"), false},
	})
	c := counts(t, r)
	if c["ingress/-1"].Packets != 2 || c["ingress/0"].Packets != 2 {
		t.Fatalf("counters %v", c)
	}
}

// TestAtomicReplaceKeepsConnectionsAndCounters: replacing the rule set
// switches behaviour at once; tracked connections and the counters of rules
// that stay survive.
func TestAtomicReplaceKeepsConnectionsAndCounters(t *testing.T) {
	cfg := &Config{IngressPolicy: "drop", AcceptEstablished: true}
	r := nftest.New(t, Type, fwModel(datapath.XDP, cfg, []Rule{{ID: 1, Proto: "udp", Dport: "53", Action: "accept"}}, nil))
	v := hookVerdicts[datapath.XDP]
	runSteps(t, r, v, []step{
		{in, udp("198.19.0.1", "198.18.1.2", 999, 53), true},
		{in, udp("198.19.0.1", "198.18.1.2", 999, 54), false},
	})
	for gen := 0; gen < 3; gen++ {
		if err := r.Update(fwModel(datapath.XDP, cfg, []Rule{
			{ID: 1, Proto: "udp", Dport: "53", Action: "accept"},
			{ID: 2, Proto: "udp", Dport: "54", Action: "accept"}}, nil)); err != nil {
			t.Fatal(err)
		}
	}
	runSteps(t, r, v, []step{
		{in, udp("198.19.0.1", "198.18.1.2", 999, 54), true},
		{out, udp("198.18.1.2", "198.19.0.1", 53, 999), true}, // reply of the first flow: established
	})
	c := counts(t, r)
	if c["ingress/1"].Packets != 1 || c["ingress/2"].Packets != 1 || c["ingress/0"].Packets != 1 {
		t.Fatalf("counters %v", c)
	}
	conns, _ := connections(r.Handle())
	if len(conns) != 2 {
		t.Fatalf("connections %+v", conns)
	}
}

// TestVerdictCache: a connection's packets reuse the rule their direction
// last matched only while nothing it depends on changes — the rule set (a
// replacement, even back to an older generation's parity), the TCP flags,
// the state and the direction — and every packet still counts on its rule.
func TestVerdictCache(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			v := hookVerdicts[hook]
			cfg := &Config{IngressPolicy: "drop"}
			r := nftest.New(t, Type, fwModel(hook, cfg, []Rule{
				{ID: 1, Proto: "tcp", TCPFlags: "FIN", Action: "drop"},
				{ID: 2, Proto: "tcp", Sport: "80", Action: "drop"},
				{ID: 3, Proto: "tcp", Dport: "80", Action: "accept"},
				{ID: 4, Proto: "udp", Sport: "7", Action: "accept"},
				{ID: 5, Proto: "udp", Dport: "53", Action: "accept"},
			}, nil))
			c, s := "198.18.1.2", "198.19.0.1"
			runSteps(t, r, v, []step{
				{in, tcp(c, s, 4000, 80, "S"), true},
				{in, tcp(s, c, 80, 4000, "SA"), false}, // reply direction: rule 2
				{in, tcp(c, s, 4000, 80, "A"), true},
				{in, tcp(c, s, 4000, 80, "A"), true},
				{in, tcp(c, s, 4000, 80, "FA"), false}, // flags changed: rule 1
				{in, tcp(c, s, 4000, 80, "A"), true},   // and back: rule 3
				{in, udp(c, s, 999, 53), true},         // rule 5, at bit 4
				{in, udp(c, s, 999, 53), true},
			})
			got := counts(t, r)
			if got["ingress/1"].Packets != 1 || got["ingress/2"].Packets != 1 || got["ingress/3"].Packets != 4 || got["ingress/5"].Packets != 2 {
				t.Fatalf("counters %v, want rule 1: 1, rule 2: 1, rule 3: 4, rule 5: 2", got)
			}
			// Two replacements bring the generation back to the same parity,
			// with the rules at other bits: no cached verdict survives them.
			next := []Rule{
				{ID: 5, Proto: "udp", Dport: "53", Action: "drop"}, // now at bit 0
				{ID: 6, Proto: "udp", Sport: "999", Action: "accept"},
				{ID: 7, Proto: "udp", Dport: "53", Action: "accept"},
				{ID: 8, Proto: "udp", Dport: "53", Action: "accept"},
				{ID: 9, Proto: "udp", Dport: "53", Action: "accept"}, // at bit 4
			}
			for _, rs := range [][]Rule{next[:1], next} {
				if err := r.Update(fwModel(hook, cfg, rs, nil)); err != nil {
					t.Fatal(err)
				}
			}
			runSteps(t, r, v, []step{{in, udp(c, s, 999, 53), false}})
			got = counts(t, r)
			if got["ingress/5"].Packets != 3 || got["ingress/9"].Packets != 0 {
				t.Fatalf("counters %v, want rule 5: 3, rule 9: 0", got)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	cases := []struct {
		cfg  *Config
		r    Rule
		want string
	}{
		{nil, Rule{ID: 1, Src: "198.18.0.0/33", Action: "accept"}, "src: invalid prefix"},
		{nil, Rule{ID: 1, Dst: "198.18.0.1/16", Action: "accept"}, "dst: \"198.18.0.1/16\" has host bits set"},
		{nil, Rule{ID: 1, Proto: "tcp", Dport: "200-100", Action: "accept"}, "dport: inverted port range"},
		{nil, Rule{ID: 1, Proto: "tcp", Sport: "70000", Action: "accept"}, "sport: invalid port"},
		{nil, Rule{ID: 1, Dport: "80", Action: "accept"}, "dport: ports need proto tcp or udp"},
		{nil, Rule{ID: 1, State: "new,bogus", Action: "accept"}, "state: unknown state \"bogus\""},
		{nil, Rule{ID: 1, Proto: "tcp", TCPFlags: "SYN,XMAS", Action: "accept"}, "tcp_flags: unknown TCP flag"},
		{nil, Rule{ID: 1, TCPFlags: "SYN", Action: "accept"}, "tcp_flags need proto tcp"},
		{nil, Rule{ID: 1, Proto: "sctpx", Action: "accept"}, "proto: unknown protocol"},
		{nil, Rule{ID: 1}, "action: required"},
		{nil, Rule{ID: 1, Action: "reject"}, "action: unknown action"},
		{nil, Rule{ID: 0, Action: "accept"}, "id: rule id 0 out of range"},
		{&Config{IngressPolicy: "maybe"}, Rule{ID: 1, Action: "accept"}, "ingress_policy: unknown policy"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		topo.Put(fwModel(datapath.XDP, c.cfg, []Rule{c.r}, nil))
		err := topo.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.r, err, c.want)
		}
	}
	// A bad update leaves the running rules alone.
	r := nftest.New(t, Type, fwModel(datapath.XDP, &Config{IngressPolicy: "drop"}, []Rule{{ID: 1, Proto: "udp", Action: "accept"}}, nil))
	if err := r.Update(fwModel(datapath.XDP, nil, []Rule{{ID: 1, Proto: "udp", Dport: "9-1", Action: "accept"}}, nil)); err == nil {
		t.Fatal("bad update accepted")
	}
	runSteps(t, r, hookVerdicts[datapath.XDP], []step{
		{in, udp("198.19.0.1", "198.18.1.2", 999, 5), true},
		{in, tcp("198.19.0.1", "198.18.1.2", 999, 5, "S"), false},
	})
}

// genRules makes n rules that do not match the test traffic (distinct /32
// sources, port ranges, protocols), then the rules that do.
func genRules(n int) []Rule {
	rules := make([]Rule, 0, n)
	for i := 0; i < n-2; i++ {
		r := Rule{ID: i + 1, Src: fmt.Sprintf("198.18.%d.%d", 100+i/250, 1+i%250), Action: "drop"}
		switch i % 4 {
		case 1:
			r.Proto, r.Dport = "tcp", fmt.Sprintf("%d-%d", 1000+i%5000, 1000+i%5000+i%7)
		case 2:
			r.Proto, r.Sport = "udp", fmt.Sprint(2000+i%3000)
			r.Dst = fmt.Sprintf("198.19.%d.0/24", i%200)
		case 3:
			r.Proto, r.TCPFlags, r.State = "tcp", "SYN", "new"
		}
		rules = append(rules, r)
	}
	rules = append(rules, Rule{ID: n - 1, Src: "198.18.1.0/24", Proto: "udp", Dport: "53", Action: "accept"},
		Rule{ID: n, Src: "198.18.1.0/24", Action: "drop"})
	return rules
}

// Test10kRules: 10,240 rules per chain load and classify correctly (the
// matching rules are the last two), in both chains, and the whole set
// compiles and loads quickly.
func Test10kRules(t *testing.T) {
	rules := genRules(MaxRules)
	start := time.Now()
	r := nftest.New(t, Type, fwModel(datapath.XDP, nil, rules, rules))
	t.Logf("load + sync of 2 x %d rules: %v", len(rules), time.Since(start))
	v := hookVerdicts[datapath.XDP]
	runSteps(t, r, v, []step{
		{in, udp("198.18.1.7", "198.19.0.1", 999, 53), true},
		{in, udp("198.18.1.7", "198.19.0.1", 999, 54), false},
		{in, udp("198.18.100.5", "198.19.0.1", 999, 54), false}, // rule 5
		{in, udp("198.18.2.7", "198.19.0.1", 999, 54), true},    // policy
		{out, udp("198.18.1.7", "198.19.0.1", 999, 53), true},
	})
	c := counts(t, r)
	if c[fmt.Sprintf("ingress/%d", MaxRules-1)].Packets != 1 || c[fmt.Sprintf("ingress/%d", MaxRules)].Packets != 1 ||
		c["ingress/5"].Packets != 1 || c["ingress/0"].Packets != 1 || c[fmt.Sprintf("egress/%d", MaxRules-1)].Packets != 1 {
		t.Fatalf("counters: last %+v", c[fmt.Sprintf("ingress/%d", MaxRules)])
	}
	// Replace with a reversed decision: one switch.
	rules[len(rules)-2].Action = "drop"
	start = time.Now()
	if err := r.Update(fwModel(datapath.XDP, nil, rules, rules)); err != nil {
		t.Fatal(err)
	}
	t.Logf("replace of 2 x %d rules: %v", len(rules), time.Since(start))
	runSteps(t, r, v, []step{{in, udp("198.18.1.7", "198.19.0.1", 999, 53), false}})
}

// TestAgingAndFlush: the periodic sweep removes connections past their
// state's timeout and keeps the others; flush-connections forgets all.
func TestAgingAndFlush(t *testing.T) {
	cfg := &Config{Timeouts: &conntrack.Timeouts{UDP: 1}}
	r := nftest.New(t, Type, fwModel(datapath.XDP, cfg, nil, nil))
	v := hookVerdicts[datapath.XDP]
	runSteps(t, r, v, []step{{in, udp("198.18.1.2", "198.19.0.1", 1000, 53), true}})
	time.Sleep(1100 * time.Millisecond)
	runSteps(t, r, v, []step{
		{in, udp("198.18.1.2", "198.19.0.1", 1001, 53), true},
		{in, tcp("198.18.1.2", "198.19.0.1", 4000, 80, "S"), true},
	})
	ctl := r.Ctl.(*controller)
	if n, err := ctl.ageConns(r.Handle(), false); err != nil || n != 1 {
		t.Fatalf("sweep removed %d (%v), want the one idle UDP flow", n, err)
	}
	conns, err := connections(r.Handle())
	if err != nil || len(conns) != 2 {
		t.Fatalf("connections after the sweep %+v (%v), want the fresh UDP flow and the TCP one", conns, err)
	}
	if n, err := ctl.ageConns(r.Handle(), true); err != nil || n != 2 {
		t.Fatalf("flush removed %d (%v), want 2", n, err)
	}
	if conns, _ := connections(r.Handle()); len(conns) != 0 {
		t.Fatalf("connections after flush %+v", conns)
	}
}
