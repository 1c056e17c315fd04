package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/bridge"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	"github.com/edgenf/edgenf/internal/tenant"
)

// An endpoint is one logical thing: the port on the tenant's cube and the
// tenant's right to the interface come, stay and go together, across
// refusals, a declarative apply and a restart.
func TestEndpointLifecycle(t *testing.T) {
	lab := netlab.NewT(t)
	var ifs []string
	for _, n := range []string{"a", "b", "c"} {
		h, _, err := lab.RootVeth(n+"0", n+"1")
		if err != nil {
			t.Fatal(err)
		}
		ifs = append(ifs, h)
	}
	cfg := restartable(t)
	cfg.Tenants = []tenant.Tenant{{Name: "blue", Interfaces: []string{ifs[2]}}}
	e := openAt(t, cfg)
	defer func() { e.Close() }()
	if _, err := e.SetTenant(tenant.Tenant{Name: "red", Quota: tenant.Quota{tenant.Ports: 2}}); err != nil {
		t.Fatal(err)
	}
	update(t, e, func(tp *cube.Topology) error {
		for _, c := range []*cube.Cube{
			{Name: "redbr", Type: "bridge", Tenant: "red"}, {Name: "bluebr", Type: "bridge", Tenant: "blue"},
			{Name: "redmon", Type: "monitor", Tenant: "red"}, {Name: "bluemon", Type: "monitor", Tenant: "blue"},
		} {
			if err := tp.AddCube(c); err != nil {
				return err
			}
		}
		return nil
	})
	red, blue := tenant.Of("red"), tenant.Of("blue")
	ep := &endpoint.Endpoint{Name: "enf000000000001", Tenant: "red", Cube: "redbr", Interface: ifs[0], Network: "net", ContainerID: "c1", IfName: "eth0",
		Pod: &endpoint.Pod{Namespace: "red", Name: "web-0"}, Addresses: []string{"198.18.0.5/24"}}
	attach := func(who tenant.Actor, cubeName, point string) error {
		return e.UpdateAs(context.Background(), who, func(tp *cube.Topology, sc tenant.Scope) error {
			if err := sc.Ref(tp, "point", point); err != nil {
				return err
			}
			return tp.Attach(cubeName, point, "last")
		})
	}
	detach := func(who tenant.Actor, cubeName string) error {
		return e.UpdateAs(context.Background(), who, func(tp *cube.Topology, _ tenant.Scope) error { tp.Detach(cubeName); return nil })
	}
	if err := attach(red, "redmon", ifs[0]); !errors.Is(err, cube.ErrForbidden) {
		t.Fatalf("red attached to an interface it was not given: %v", err)
	}

	if created, err := e.AddEndpoint(ep); err != nil || !created {
		t.Fatalf("add: %v %v", created, err)
	}
	c, _ := e.Cube(tenant.Admin, "redbr")
	if p := c.Port(ep.Name); p == nil || p.Peer != ifs[0] {
		t.Fatalf("no port peered with %s: %+v", ifs[0], c.Ports)
	}
	if err := attach(red, "redmon", ifs[0]); err != nil {
		t.Fatalf("red cannot attach to its endpoint's interface: %v", err)
	}
	if err := attach(blue, "bluemon", ifs[0]); !errors.Is(err, cube.ErrForbidden) {
		t.Fatalf("blue attached to red's endpoint interface: %v", err)
	}
	if err := detach(red, "redmon"); err != nil {
		t.Fatal(err)
	}
	if got := e.Endpoints(blue); len(got) != 0 {
		t.Fatalf("blue sees red's endpoints: %v", got)
	}
	if got, ok := e.Endpoint(red, ep.Name); !ok || !got.Equal(ep) {
		t.Fatalf("red does not see its endpoint: %v %v", got, ok)
	}

	// A retried ADD changes nothing; the same name with other content is
	// a conflict; refusals change nothing.
	if created, err := e.AddEndpoint(ep); err != nil || created {
		t.Fatalf("the same endpoint again: %v %v", created, err)
	}
	rev := e.Revision()
	refused := []struct {
		ep   endpoint.Endpoint
		kind error
		msg  string
	}{
		{endpoint.Endpoint{Name: ep.Name, Tenant: "red", Cube: "redbr", Interface: ifs[1]}, cube.ErrConflict, "exists"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "green", Cube: "redbr", Interface: ifs[1]}, cube.ErrNotFound, "no tenant named"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "nosuch", Interface: ifs[1]}, cube.ErrNotFound, "no cube named"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "bluebr", Interface: ifs[1]}, cube.ErrConflict, "tenant blue's, not tenant red's"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "redmon", Interface: ifs[1]}, cube.ErrInvalid, "transparent"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "redbr", Interface: ifs[2]}, cube.ErrConflict, "assigned to tenant blue"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "redbr", Interface: ifs[0]}, cube.ErrConflict, "endpoint " + ep.Name},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "redbr", Interface: "nosuchif0"}, cube.ErrNotFound, "nosuchif0"},
		{endpoint.Endpoint{Name: "enf2", Tenant: "red", Cube: "redbr", Interface: "lo"}, cube.ErrInvalid, "host end of a pod's veth pair"},
	}
	for _, r := range refused {
		_, err := e.AddEndpoint(&r.ep)
		if !errors.Is(err, r.kind) || !strings.Contains(err.Error(), r.msg) {
			t.Errorf("%+v: got %v, want %v containing %q", r.ep, err, r.kind, r.msg)
		}
	}
	// over red's quota of 2 ports
	update(t, e, func(tp *cube.Topology) error { return tp.AddPort("redbr", cube.Port{Name: "up", Index: -1}) })
	if _, err := e.AddEndpoint(&endpoint.Endpoint{Name: "enf3", Tenant: "red", Cube: "redbr", Interface: ifs[1]}); !errors.Is(err, cube.ErrForbidden) || !strings.Contains(err.Error(), "quota") {
		t.Fatalf("over quota: %v", err)
	}
	if e.Revision() != rev+1 {
		t.Fatalf("refusals changed the state: revision %d, want %d", e.Revision(), rev+1)
	}
	// an interface something runs on already is not a pod's new one
	if err := attach(tenant.Admin, "bluemon", ifs[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddEndpoint(&endpoint.Endpoint{Name: "enf4", Tenant: "red", Cube: "redbr", Interface: ifs[1]}); !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "bluemon attached") {
		t.Fatalf("endpoint on an interface with blue's monitor: %v", err)
	}
	if err := detach(tenant.Admin, "bluemon"); err != nil {
		t.Fatal(err)
	}

	// Nothing else takes the endpoint's port apart.
	for name, fn := range map[string]func(tp *cube.Topology) error{
		"delete the port":  func(tp *cube.Topology) error { return tp.DeletePort("redbr", ep.Name) },
		"delete the cube":  func(tp *cube.Topology) error { return tp.DeleteCube("redbr") },
		"re-peer the port": func(tp *cube.Topology) error { return tp.Unpeer("redbr:" + ep.Name) },
	} {
		for _, who := range []tenant.Actor{red, tenant.Admin} {
			err := e.UpdateAs(context.Background(), who, func(tp *cube.Topology, _ tenant.Scope) error { return fn(tp) })
			if !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "pod red/web-0") {
				t.Errorf("%s as %v: %v", name, who, err)
			}
		}
	}
	if err := e.Update(func(tp *cube.Topology) error {
		c, err := tp.Edit("redbr")
		c.Tenant = "blue"
		return err
	}); !errors.Is(err, cube.ErrConflict) {
		t.Errorf("moved the cube of red's pod to blue: %v", err)
	}
	// A declarative apply keeps the endpoint's port; one without its cube
	// is refused whole.
	doc := e.Topology()
	doc.Lookup("redbr").Ports = nil
	if _, err := e.Replace(context.Background(), doc, false); err != nil {
		t.Fatalf("apply without the endpoint's port: %v", err)
	}
	if c, _ := e.Cube(tenant.Admin, "redbr"); c.Port(ep.Name) == nil || c.Port("up") != nil {
		t.Fatalf("apply: %+v", c.Ports)
	}
	doc = e.Topology()
	doc.Remove("redbr")
	if _, err := e.Replace(context.Background(), doc, false); !errors.Is(err, cube.ErrConflict) {
		t.Fatalf("apply without the endpoint's cube: %v", err)
	}

	// A restart keeps it all.
	e.Close()
	e = openAt(t, cfg)
	if got, ok := e.Endpoint(tenant.Admin, ep.Name); !ok || !got.Equal(ep) {
		t.Fatalf("after a restart: %v %v", got, ok)
	}
	if err := attach(red, "redmon", ifs[0]); err != nil {
		t.Fatalf("after a restart red cannot attach to its endpoint's interface: %v", err)
	}

	// Deleting it removes the port, what was attached on the interface,
	// and red's right to it.
	if err := e.DeleteEndpoint(ep.Name); err != nil {
		t.Fatal(err)
	}
	c, _ = e.Cube(tenant.Admin, "redbr")
	if c.Port(ep.Name) != nil {
		t.Fatalf("port left: %+v", c.Ports)
	}
	if e.Topology().AttachedTo("redmon") != "" {
		t.Fatalf("redmon still attached to the gone pod's interface")
	}
	if err := attach(red, "redmon", ifs[0]); !errors.Is(err, cube.ErrForbidden) {
		t.Fatalf("red kept the interface: %v", err)
	}
	if err := e.DeleteEndpoint(ep.Name); !errors.Is(err, cube.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	e.Close()
	e = openAt(t, cfg)
	if got := e.Endpoints(tenant.Admin); len(got) != 0 {
		t.Fatalf("after delete and restart: %v", got)
	}
}
