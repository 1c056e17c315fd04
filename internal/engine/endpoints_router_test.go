package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/tenant"
)

// A workload plugged into a router is on a port of its own: the engine
// gives the port a link-local gateway per family and the router a host
// route per workload address, records the gateways, keeps both across a
// declarative apply, and removes them with the endpoint. Refusals (an
// address another port is routed, no address at all, a gateway that is not
// link-local) leave the state as it was.
func TestEndpointOnRouter(t *testing.T) {
	lab := netlab.NewT(t)
	var ifs []string
	for _, n := range []string{"a", "b", "c"} {
		h, _, err := lab.RootVeth(n+"0", n+"1")
		if err != nil {
			t.Fatal(err)
		}
		ifs = append(ifs, h)
	}
	e := openAt(t, restartable(t))
	defer e.Close()
	base := cube.NewTopology()
	base.Put(&cube.Cube{Name: "rr", Type: "router", Tenant: "red", Ports: []cube.Port{{Name: "up", Index: 0, Addresses: []string{"198.18.1.1/24"}}}})
	update(t, e, func(tp *cube.Topology) error { return tp.AddCube(base.Lookup("rr").Clone()) })
	ep := func(name, ifname string, addrs ...string) *endpoint.Endpoint {
		return &endpoint.Endpoint{Name: name, Tenant: "red", Cube: "rr", Interface: ifname, Addresses: addrs}
	}
	routes := func() map[string]string { // prefix → port of the router's routes
		out := map[string]string{}
		for k, raw := range e.Topology().Lookup("rr").Tables["routes"] {
			var r struct{ Port string }
			json.Unmarshal(raw, &r)
			out[k] = r.Port
		}
		return out
	}
	if _, err := e.AddEndpoint(ep("enfa", ifs[0], "198.18.5.2/24", "2001:db8:5::2/64")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddEndpoint(ep("enfb", ifs[1], "198.18.5.3/24")); err != nil {
		t.Fatal(err)
	}
	a, _ := e.Endpoint(tenant.Admin, "enfa")
	b, _ := e.Endpoint(tenant.Admin, "enfb")
	if len(a.Gateways) != 2 || a.Gateways[0] != "169.254.1.1" || !strings.HasPrefix(a.Gateways[1], "fe80::") || !slices.Equal(b.Gateways, []string{"169.254.1.2"}) {
		t.Fatalf("gateways: %v and %v", a.Gateways, b.Gateways)
	}
	rr := e.Topology().Lookup("rr")
	if p := rr.Port("enfa"); p == nil || !slices.Equal(p.Addresses, []string{"169.254.1.1/32"}) {
		t.Fatalf("port enfa: %+v", p)
	}
	want := map[string]string{"198.18.5.2/32": "enfa", "2001:db8:5::2/128": "enfa", "198.18.5.3/32": "enfb"}
	if got := routes(); !maps.Equal(got, want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
	// a retried ADD (no gateways named) is the same endpoint
	if created, err := e.AddEndpoint(ep("enfa", ifs[0], "198.18.5.2/24", "2001:db8:5::2/64")); err != nil || created {
		t.Fatalf("retry: created %v, %v", created, err)
	}

	before, _ := json.Marshal(e.Topology())
	for _, c := range []struct {
		ep   *endpoint.Endpoint
		kind error
		msg  string
	}{
		{ep("enfc", ifs[2], "198.18.5.3/24"), cube.ErrConflict, "198.18.5.3 is routed by cube rr already"},
		{ep("enfc", ifs[2]), cube.ErrInvalid, "needs an address to be routed to"},
		{&endpoint.Endpoint{Name: "enfc", Tenant: "red", Cube: "rr", Interface: ifs[2], Addresses: []string{"198.18.5.9/24"}, Gateways: []string{"198.18.1.1"}}, cube.ErrInvalid, "169.254.0.0/16"},
	} {
		if _, err := e.AddEndpoint(c.ep); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("AddEndpoint %v: %v, want %v with %q", c.ep.Addresses, err, c.kind, c.msg)
		}
	}
	if after, _ := json.Marshal(e.Topology()); string(after) != string(before) {
		t.Fatal("a refused endpoint changed the topology")
	}

	// A declarative apply of the router alone keeps the workloads' ports,
	// gateways and host routes.
	if _, err := e.Replace(context.Background(), base, false); err != nil {
		t.Fatal(err)
	}
	if got := routes(); !maps.Equal(got, want) {
		t.Fatalf("routes after an apply %v, want %v", got, want)
	}
	if p := e.Topology().Lookup("rr").Port("enfb"); p == nil || !slices.Equal(p.Addresses, []string{"169.254.1.2/32"}) {
		t.Fatalf("port enfb after an apply: %+v", p)
	}

	if err := e.DeleteEndpoint("enfa"); err != nil {
		t.Fatal(err)
	}
	if got := routes(); !maps.Equal(got, map[string]string{"198.18.5.3/32": "enfb"}) {
		t.Fatalf("routes after DELETE %v", got)
	}
	// the freed gateway is handed out again
	if _, err := e.AddEndpoint(ep("enfc", ifs[2], "198.18.5.2/24")); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.Endpoint(tenant.Admin, "enfc"); !slices.Equal(c.Gateways, []string{"169.254.1.1"}) {
		t.Fatalf("gateways of enfc: %v", c.Gateways)
	}
}
