package accuracy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
)

// chain is a topology from interface in to interface out, and a frame
// that crosses it.
type chain struct {
	name        string
	calibration bool
	build       func(id, in, out string) (*cube.Topology, []byte)
}

const (
	routerMAC  = "02:00:00:00:aa:00"
	nextHopMAC = "02:00:00:00:00:11"
)

func row(v any) json.RawMessage { return estimate.Row(v) }

// examplesSource is the text of an example P4 program ("" if unreadable:
// the engine then says what is missing).
func examplesSource(name string) string {
	b, _ := os.ReadFile(filepath.Join(examplesDir(), name))
	return string(b)
}

// router is a router between in and out routing 198.19.0.0/16 to a next
// hop behind out.
func router(name, in, out string, cfg string) *cube.Cube {
	c := &cube.Cube{Name: name, Type: "router",
		Ports: []cube.Port{
			{Name: "in", Index: 0, Peer: in, MAC: routerMAC, Addresses: []string{"198.18.0.1/24"}},
			{Name: "out", Index: 1, Peer: out, Addresses: []string{"198.18.1.1/24"}},
		}}
	if cfg != "" {
		c.Config = json.RawMessage(cfg)
	}
	c.SetRow("arp", "198.18.1.2", row(map[string]string{"ip": "198.18.1.2", "mac": nextHopMAC}))
	c.SetRow("routes", "198.19.0.0/16", row(map[string]string{"prefix": "198.19.0.0/16", "next_hop": "198.18.1.2"}))
	return c
}

func firewall(name string, rules int) *cube.Cube {
	c := &cube.Cube{Name: name, Type: "firewall"}
	for i := 0; i < rules; i++ {
		c.SetRow("ingress", fmt.Sprint(i+1), row(map[string]any{"id": i + 1, "proto": "tcp", "dport": fmt.Sprint(10000 + i), "action": "drop"}))
	}
	return c
}

func topo(cubes []*cube.Cube, attach ...[2]string) *cube.Topology {
	t := cube.NewTopology()
	for _, c := range cubes {
		t.Put(c)
	}
	for _, a := range attach {
		t.Attachments[a[1]] = append(t.Attachments[a[1]], a[0])
	}
	return t
}

var routed = estimate.Frame(estimate.FrameSpec{DstMAC: routerMAC, Src: "198.18.0.10", Dst: "198.19.0.1", Sport: 40000, Dport: 53})

// chains of 2 to 5 programs.
func chains() []chain {
	return []chain{
		{name: "2 portfwd cubes", calibration: true, build: func(id, in, out string) (*cube.Topology, []byte) {
			a := &cube.Cube{Name: id + "a", Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0, Peer: in}, {Name: "p1", Index: 1, Peer: id + "b:p0"}}}
			b := &cube.Cube{Name: id + "b", Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0, Peer: id + "a:p1"}, {Name: "p1", Index: 1, Peer: out}}}
			for _, c := range []*cube.Cube{a, b} {
				c.SetRow("rules", "p0", row(map[string]string{"in_port": "p0", "out_port": "p1"}))
			}
			return topo([]*cube.Cube{a, b}), estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1"})
		}},
		{name: "firewall (100 rules) → router", build: func(id, in, out string) (*cube.Topology, []byte) {
			return topo([]*cube.Cube{router(id+"r", in, out, ""), firewall(id+"f", 100)}, [2]string{id + "f", id + "r:in"}), routed
		}},
		{name: "firewall → router (no route cache, 500 routes) → nat", build: func(id, in, out string) (*cube.Topology, []byte) {
			r := router(id+"r", in, out, `{"disable_route_cache":true}`)
			for i := 1; i < 500; i++ {
				p := fmt.Sprintf("10.%d.%d.0/24", i>>8, i&255)
				r.SetRow("routes", p, row(map[string]string{"prefix": p, "next_hop": "198.18.1.2"}))
			}
			nat := &cube.Cube{Name: id + "n", Type: "nat", Config: json.RawMessage(`{"masquerade":true}`)}
			return topo([]*cube.Cube{r, firewall(id+"f", 20), nat}, [2]string{id + "f", id + "r:in"}, [2]string{id + "n", id + "r:out"}), routed
		}},
		{name: "ddos → firewall → router → nat", build: func(id, in, out string) (*cube.Topology, []byte) {
			dd := &cube.Cube{Name: id + "d", Type: "ddos"}
			for i := 0; i < 200; i++ {
				p := fmt.Sprintf("10.%d.%d.%d", i>>8, i&255, 7)
				dd.SetRow("blacklist_src", p, row(map[string]string{"prefix": p}))
			}
			nat := &cube.Cube{Name: id + "n", Type: "nat", Config: json.RawMessage(`{"masquerade":true}`)}
			return topo([]*cube.Cube{router(id+"r", in, out, ""), firewall(id+"f", 1000), dd, nat},
				[2]string{id + "d", id + "r:in"}, [2]string{id + "f", id + "r:in"}, [2]string{id + "n", id + "r:out"}), routed
		}},
		{name: "ddos → firewall → router → nat → monitor", build: func(id, in, out string) (*cube.Topology, []byte) {
			nat := &cube.Cube{Name: id + "n", Type: "nat", Config: json.RawMessage(`{"masquerade":true}`)}
			mon := &cube.Cube{Name: id + "m", Type: "monitor"}
			return topo([]*cube.Cube{router(id+"r", in, out, ""), firewall(id+"f", 50), &cube.Cube{Name: id + "d", Type: "ddos"}, nat, mon},
				[2]string{id + "d", id + "r:in"}, [2]string{id + "f", id + "r:in"}, [2]string{id + "m", id + "r:out"}, [2]string{id + "n", id + "r:out"}), routed
		}},
		{name: "bridge → router", build: func(id, in, out string) (*cube.Topology, []byte) {
			br := &cube.Cube{Name: id + "b", Type: "bridge", Ports: []cube.Port{{Name: "p0", Index: 0, Peer: in}, {Name: "p1", Index: 1, Peer: id + "r:in"}}}
			br.SetRow("fdb", routerMAC+"/1", row(map[string]any{"mac": routerMAC, "vlan": 1, "port": "p1"}))
			r := router(id+"r", id+"b:p1", out, "")
			return topo([]*cube.Cube{br, r}), routed
		}},
		{name: "slicer (2 slices, policed) → firewall → router", build: func(id, in, out string) (*cube.Topology, []byte) {
			sl := &cube.Cube{Name: id + "s", Type: "slicer", Hook: "xdp", Config: json.RawMessage(`{"uplink":"up"}`),
				Ports: []cube.Port{{Name: "up", Index: 0, Peer: in}, {Name: "a", Index: 1, Peer: id + "r:in"}, {Name: "b", Index: 2}}}
			sl.SetRow("slices", "a", row(map[string]any{"name": "a", "id": 1, "port": "a", "rules": []map[string]string{{"dst": "198.19.0.0/16"}},
				"rate_bps": 400_000_000_000}))
			sl.SetRow("slices", "b", row(map[string]any{"name": "b", "id": 2, "port": "b", "rules": []map[string]string{{"src": "198.18.9.0/24"}}}))
			r := router(id+"r", id+"s:a", out, "")
			return topo([]*cube.Cube{sl, r, firewall(id+"f", 30)}, [2]string{id + "f", id + "r:in"}), routed
		}},
		{name: "l3router.p4 with a firewall", build: func(id, in, out string) (*cube.Topology, []byte) {
			c := &cube.Cube{Name: id + "p", Type: "p4", Config: row(map[string]string{"program": "l3router.p4", "source": examplesSource("l3router.p4")}),
				Ports: []cube.Port{{Name: "in", Index: 0, Peer: in}, {Name: "out", Index: 1, Peer: out}}}
			c.SetRow("entries", "lpm", row(map[string]any{"table": "MyIngress.ipv4_lpm", "match": map[string]string{"hdr.ipv4.dstAddr": "198.19.0.0/16"},
				"action": "MyIngress.ipv4_forward", "params": map[string]string{"dstAddr": nextHopMAC, "port": "1"}}))
			c.SetRow("entries", "mac", row(map[string]any{"table": "MyIngress.port_mac", "match": map[string]string{"standard_metadata.egress_spec": "1"},
				"action": "MyIngress.set_smac", "params": map[string]string{"smac": "02:00:00:00:aa:01"}}))
			return topo([]*cube.Cube{c, firewall(id+"f", 200)}, [2]string{id + "f", id + "p:in"}), routed
		}},
	}
}
