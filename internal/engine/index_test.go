package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/tenant"
)

// randomTopology is a topology of n cubes of three owners, some ports
// peered with interfaces (one port per interface), some cubes attached
// to points.
func randomTopology(r *rand.Rand, n int) *cube.Topology {
	t := cube.NewTopology()
	for i := range n {
		t.Put(randomCube(r, fmt.Sprintf("c%d", i)))
	}
	dedupPeers(t)
	for i := range n / 3 {
		t.Attachments[fmt.Sprintf("c%d:p0", r.IntN(n))] = randomList(r, n)
		t.Attachments[fmt.Sprintf("veth%d", i)] = randomList(r, n)
	}
	return t
}

func randomCube(r *rand.Rand, name string) *cube.Cube {
	c := &cube.Cube{Name: name, Type: "portfwd", Hook: []datapath.Hook{datapath.XDP, datapath.TC}[r.IntN(2)], Tenant: []string{"", "red", "blue"}[r.IntN(3)]}
	for p := range r.IntN(3) {
		port := cube.Port{Name: fmt.Sprintf("p%d", p), Index: p}
		if r.IntN(2) == 0 {
			port.Peer = fmt.Sprintf("veth%d", r.IntN(20))
		}
		c.Ports = append(c.Ports, port)
		if r.IntN(2) == 0 {
			c.SetRow("rules", port.Name, json.RawMessage(fmt.Sprintf(`{"in_port":%q,"out_port":%q}`, port.Name, port.Name)))
		}
	}
	return c
}

func randomList(r *rand.Rand, n int) []string {
	var l []string
	for range 1 + r.IntN(3) {
		l = append(l, fmt.Sprintf("c%d", r.IntN(n+2))) // some name no cube
	}
	return l
}

// dedupPeers keeps one port per interface, as the engine does.
func dedupPeers(t *cube.Topology) {
	seen := map[string]bool{}
	for _, name := range t.CubeNames() {
		c := t.Lookup(name)
		for i, p := range c.Ports {
			if p.Peer != "" && seen[p.Peer] {
				c.Ports[i].Peer = ""
			}
			seen[p.Peer] = true
		}
	}
}

// TestTopologyIndexFollowsChanges: the index kept change by change from
// each change's dirty set answers as counting the topology afresh (the
// walks it replaces: tenant.Count, the ports peered with interfaces), over
// random changes of cubes' owners, ports, entries, peers and attachments,
// before and after the tenants' kernel memory is priced.
func TestTopologyIndexFollowsChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 3000))
	const n = 40
	prev := randomTopology(r, n)
	e := &Engine{topo: prev, specs: map[[32]byte]*ebpf.CollectionSpec{}}
	e.tenants.memory = map[[32]byte]int64{}
	e.rebuildIndex(prev)
	for step := range 300 {
		if step == 150 {
			e.price()
		}
		next := prev.Clone()
		cs := &changeSet{changed: map[string]bool{}}
		for range 1 + r.IntN(3) {
			name := fmt.Sprintf("c%d", r.IntN(n+2))
			if r.IntN(4) == 0 {
				next.Remove(name)
			} else {
				next.Put(randomCube(r, name))
			}
		}
		dedupPeers(next)
		// dedupPeers may have unpeered a cube the step did not pick
		for _, name := range next.ChangedSince(prev) {
			cs.changed[name] = true
		}
		for range r.IntN(3) {
			point := fmt.Sprintf("veth%d", r.IntN(n/3+2))
			if r.IntN(3) == 0 {
				delete(next.Attachments, point)
			} else {
				next.Attachments[point] = randomList(r, n)
			}
			if !slices.Contains(cs.points, point) {
				cs.points = append(cs.points, point)
			}
		}
		e.noteIndex(prev, next, cs, false)
		e.topo = next
		fresh := &Engine{topo: next}
		fresh.rebuildIndex(next)
		if !maps.Equal(e.index.peers, fresh.index.peers) || !maps.Equal(e.index.attached, fresh.index.attached) {
			t.Fatalf("step %d: peers, attached\n%v %v\nwant, counted afresh,\n%v %v", step, e.index.peers, e.index.attached, fresh.index.peers, fresh.index.attached)
		}
		for _, who := range []string{"", "red", "blue"} {
			memory := e.cubeMemory
			if !e.index.priced || who == "" { // the administrator's cubes are never priced
				memory = nil
			}
			want, err := tenant.Count(next, who, memory)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.usage(who, false)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("step %d: %q holds %v by the index; tenant.Count: %v", step, who, got, want)
			}
			if cubes, attached := e.Holds(who); int64(cubes) != want[tenant.Cubes] || int64(attached) != want[tenant.Attachments] {
				t.Fatalf("step %d: %q holds %d cubes, %d attachments; tenant.Count: %v", step, who, cubes, attached, want)
			}
		}
		prev = next
	}
	if red, _ := e.usage("red", true); red[tenant.KernelMemory] == 0 {
		t.Fatal("red's cubes hold no kernel memory: the test does not exercise pricing")
	}
}

// TestCheckEndpointsOfDirtyCubesJudgesAsTheFullCheck: over random changes
// of a topology whose endpoints' ports are whole, checking only the
// endpoints of the changed cubes refuses exactly what checking every
// endpoint refuses, with the same error.
func TestCheckEndpointsOfDirtyCubesJudgesAsTheFullCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2))
	const n = 30
	applied := cube.NewTopology()
	e := &Engine{endpoints: map[string]*endpoint.Endpoint{}}
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		c := &cube.Cube{Name: name, Type: "portfwd", Tenant: []string{"", "red"}[i%2], Ports: []cube.Port{{Name: "p0", Index: 0}}}
		for j := range r.IntN(3) {
			ep := fmt.Sprintf("ep%d-%d", i, j)
			c.Ports = append(c.Ports, cube.Port{Name: ep, Index: j + 1, Peer: "veth-" + ep})
			e.putEndpoint(&endpoint.Endpoint{Name: ep, Tenant: c.Tenant, Cube: name, Interface: "veth-" + ep})
		}
		applied.Put(c)
	}
	if err := e.checkEndpoints(applied, dirty{all: true}); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for step := range 500 {
		next := applied.Clone()
		for range 1 + r.IntN(3) {
			name := fmt.Sprintf("c%d", r.IntN(n))
			c := next.Lookup(name)
			if c == nil {
				continue
			}
			switch r.IntN(5) {
			case 0:
				next.Remove(name)
			case 1:
				c.Tenant = "blue"
			case 2:
				if len(c.Ports) > 1 {
					c.Ports = c.Ports[:len(c.Ports)-1]
				}
			case 3:
				if len(c.Ports) > 1 {
					c.Ports[1].Peer = "veth-other"
				}
			default:
				c.Ports[0].MAC = "02:00:00:00:00:01" // harmless
			}
		}
		full := e.checkEndpoints(next, dirty{all: true})
		changed := e.checkEndpoints(next, dirty{cubes: next.ChangedSince(applied)})
		if fmt.Sprint(full) != fmt.Sprint(changed) {
			t.Fatalf("step %d: checking the changed cubes' endpoints: %v; checking all: %v", step, changed, full)
		}
		if full != nil {
			refused++
		}
	}
	if refused == 0 || refused == 500 {
		t.Fatalf("%d of 500 random changes refused: the test does not exercise both verdicts", refused)
	}
}

// TestEngineIndexKeptThroughChanges: the engine's index follows its
// changes (tracked, declarative) and a restart, and knownTenant answers
// from it: a tenant with cubes and no record is known until its last
// cube goes.
func TestEngineIndexKeptThroughChanges(t *testing.T) {
	e := testEngine(t, "enfindex")
	check := func(when string) {
		t.Helper()
		applied := e.Topology()
		for _, who := range []string{"", "red", "blue"} {
			use, _ := tenant.Count(applied, who, nil)
			cubes, attached := e.Holds(who)
			if int64(cubes) != use[tenant.Cubes] || int64(attached) != use[tenant.Attachments] {
				t.Fatalf("%s: %q holds %d cubes, %d attachments by the index; %d, %d counted", when, who, cubes, attached, use[tenant.Cubes], use[tenant.Attachments])
			}
		}
	}
	red := func(i int) []*cube.Cube {
		cs := chain(i)
		for _, c := range cs {
			c.Tenant = "red"
		}
		return cs
	}
	chains(t, e, 2, append(red(7), &cube.Cube{Name: "mon", Type: "monitor", Tenant: "red"})...)
	if err := e.Update(func(tp *cube.Topology) error { return tp.Attach("mon", "c0a:p0", "last") }); err != nil {
		t.Fatal(err)
	}
	check("after adding")
	if err := e.knownTenant("red"); err != nil {
		t.Fatalf("red has cubes: %v", err)
	}
	if err := e.Update(func(tp *cube.Topology) error {
		c, err := tp.Edit("c7a")
		c.Tenant = "blue"
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check("after moving a cube to blue")
	if _, err := e.Replace(context.Background(), e.Topology(), false); err != nil {
		t.Fatal(err)
	}
	check("after a declarative apply")
	if err := e.Update(func(tp *cube.Topology) error {
		tp.Detach("mon")
		for _, n := range []string{"mon", "c7a", "c7b"} {
			if err := tp.DeleteCube(n); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check("after removing red's cubes")
	if err := e.knownTenant("red"); err == nil || !strings.Contains(err.Error(), `no tenant named "red"`) {
		t.Fatalf("red has no cube and no record: %v", err)
	}
}
