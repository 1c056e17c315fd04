package tenant_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/ddos"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/tenant"
)

// world: red owns r1 (peered with its interface veth-r) and r2; blue owns
// b1 (peered with veth-b); the administrator's a1 is peered with r2:p1.
func world(t *testing.T) *cube.Topology {
	t.Helper()
	tp := cube.NewTopology()
	add := func(name, typ, ten string, ports ...cube.Port) {
		tp.Put(&cube.Cube{Name: name, Type: typ, Hook: "xdp", Tenant: ten, Ports: ports})
	}
	add("r1", "portfwd", "red", cube.Port{Name: "p0", Index: 0, Peer: "veth-r"}, cube.Port{Name: "p1", Index: 1})
	add("r2", "portfwd", "red", cube.Port{Name: "p0", Index: 0}, cube.Port{Name: "p1", Index: 1, Peer: "a1:p0"})
	add("rm", "monitor", "red")
	add("b1", "portfwd", "blue", cube.Port{Name: "p0", Index: 0, Peer: "veth-b"}, cube.Port{Name: "p1", Index: 1})
	add("a1", "portfwd", "", cube.Port{Name: "p0", Index: 0, Peer: "r2:p1"})
	add("am", "monitor", "")
	tp.Attachments["r1:p0"] = []string{"am"}
	return tp
}

var red = tenant.Scope{Actor: tenant.Of("red"), Record: &tenant.Tenant{Name: "red", Interfaces: []string{"veth-r", "veth-r2"}}}

func is(err, kind error) bool { return errors.Is(err, kind) }

// A tenant naming another's cube, or an interface not given to it, gets the
// answer it would get if it did not exist: nothing tells it what others have.
func TestRefsOutsideTheTenantLookMissing(t *testing.T) {
	tp := world(t)
	for _, c := range []struct {
		ref  string
		kind error
		msg  string
	}{
		{"b1:p1", cube.ErrNotFound, `no cube named "b1"`},
		{"ghost:p0", cube.ErrNotFound, `no cube named "ghost"`},
		{"a1:p0", cube.ErrNotFound, `no cube named "a1"`},
		{"veth-b", cube.ErrForbidden, `interface "veth-b" is not assigned to tenant red`},
		{"eth9", cube.ErrForbidden, `interface "eth9" is not assigned to tenant red`},
	} {
		err := red.Ref(tp, "peer", c.ref)
		if !is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v %q", c.ref, err, c.kind, c.msg)
			continue
		}
		if strings.Contains(err.Error(), "blue") {
			t.Errorf("%s: the refusal names blue: %v", c.ref, err)
		}
	}
	for _, ok := range []string{"r2:p0", "veth-r2"} {
		if err := red.Ref(tp, "peer", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	// An interface of red's that the administrator peered with blue's cube
	// is busy, without saying whose it is.
	tp.Lookup("b1").Ports[1].Peer = "veth-r2"
	if err := red.Ref(tp, "peer", "veth-r2"); !is(err, cube.ErrConflict) || strings.Contains(err.Error(), "b1") {
		t.Errorf("interface in use by blue: %v", err)
	}
	if err := (tenant.Scope{Actor: tenant.Admin}).Ref(tp, "peer", "b1:p1"); err != nil {
		t.Errorf("the administrator names anything: %v", err)
	}
}

func TestChangeStaysWithinTheTenant(t *testing.T) {
	cases := []struct {
		name   string
		change func(tp *cube.Topology)
		kind   error // nil: allowed
	}{
		{"own cube's settings", func(tp *cube.Topology) { tp.Lookup("r1").Ports[1].MAC = "02:00:00:00:00:01" }, nil},
		{"peer own ports", func(tp *cube.Topology) {
			tp.Lookup("r1").Ports[1].Peer, tp.Lookup("r2").Ports[0].Peer = "r2:p0", "r1:p1"
		}, nil},
		{"peer with blue's port", func(tp *cube.Topology) {
			tp.Lookup("r1").Ports[1].Peer, tp.Lookup("b1").Ports[1].Peer = "b1:p1", "r1:p1"
		}, cube.ErrNotFound},
		{"peer with an interface not given", func(tp *cube.Topology) { tp.Lookup("r1").Ports[1].Peer = "veth-b" }, cube.ErrForbidden},
		{"change blue's cube", func(tp *cube.Topology) { tp.Lookup("b1").Ports[1].MAC = "02:00:00:00:00:01" }, cube.ErrNotFound},
		{"delete blue's cube", func(tp *cube.Topology) { tp.Remove("b1") }, cube.ErrNotFound},
		{"create a cube for blue", func(tp *cube.Topology) {
			tp.Put(&cube.Cube{Name: "x", Type: "portfwd", Tenant: "blue"})
		}, cube.ErrForbidden},
		{"give own cube away", func(tp *cube.Topology) { tp.Lookup("r1").Tenant = "blue" }, cube.ErrForbidden},
		{"delete own cube peered with the administrator's", func(tp *cube.Topology) {
			tp.Remove("r2")
			tp.Lookup("a1").Ports[0].Peer = ""
		}, nil},
		{"attach own monitor to own port", func(tp *cube.Topology) { tp.Attachments["r2:p0"] = []string{"rm"} }, nil},
		{"attach own monitor in front of the administrator's", func(tp *cube.Topology) { tp.Attachments["r1:p0"] = []string{"rm", "am"} }, nil},
		{"attach own monitor to own interface", func(tp *cube.Topology) { tp.Attachments["veth-r2"] = []string{"rm"} }, nil},
		{"attach to blue's port", func(tp *cube.Topology) { tp.Attachments["b1:p0"] = []string{"rm"} }, cube.ErrNotFound},
		{"attach to blue's interface", func(tp *cube.Topology) { tp.Attachments["veth-b"] = []string{"rm"} }, cube.ErrForbidden},
		{"attach to the administrator's port", func(tp *cube.Topology) { tp.Attachments["a1:p0"] = []string{"rm"} }, cube.ErrNotFound},
		{"attach the administrator's monitor", func(tp *cube.Topology) { tp.Attachments["r2:p0"] = []string{"am"}; delete(tp.Attachments, "r1:p0") }, cube.ErrNotFound},
		{"detach the administrator's monitor", func(tp *cube.Topology) { delete(tp.Attachments, "r1:p0") }, cube.ErrNotFound},
		{"delete the port the administrator's monitor is on", func(tp *cube.Topology) {
			tp.Lookup("r1").Ports = tp.Lookup("r1").Ports[1:]
			delete(tp.Attachments, "r1:p0")
		}, nil},
		{"mirror to blue's interface", func(tp *cube.Topology) {
			tp.Put(&cube.Cube{Name: "rd", Type: "ddos", Tenant: "red", Config: json.RawMessage(`{"scan":{},"mirror_interface":"veth-b"}`)})
		}, cube.ErrForbidden},
		{"mirror to own interface", func(tp *cube.Topology) {
			tp.Put(&cube.Cube{Name: "rd", Type: "ddos", Tenant: "red", Config: json.RawMessage(`{"scan":{},"mirror_interface":"veth-r2"}`)})
		}, nil},
	}
	for _, c := range cases {
		prev := world(t)
		next := prev.Clone()
		c.change(next)
		err := red.Change(prev, next)
		switch {
		case c.kind == nil && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.kind != nil && !is(err, c.kind):
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		case err != nil && strings.Contains(err.Error(), "blue"):
			t.Errorf("%s: the refusal names blue: %v", c.name, err)
		}
		if err := (tenant.Scope{Actor: tenant.Admin}).Change(prev, next); err != nil {
			t.Errorf("%s: the administrator was refused: %v", c.name, err)
		}
	}
}

func TestQuotaCheck(t *testing.T) {
	limits := tenant.Quota{tenant.Cubes: 2}.Over(tenant.Defaults)
	err := tenant.Check(limits, tenant.Usage{tenant.Cubes: 2}, tenant.Usage{tenant.Cubes: 3})
	if !is(err, cube.ErrForbidden) || !strings.Contains(err.Error(), "over quota cubes: limit 2, in use 2, this change needs 3") {
		t.Fatalf("over quota: %v", err)
	}
	// Already over (the limit was lowered): shrinking or staying is fine.
	if err := tenant.Check(limits, tenant.Usage{tenant.Cubes: 5}, tenant.Usage{tenant.Cubes: 4}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tenant.Parse("kernel_memory_bytes=256M"); err != nil {
		t.Fatal(err)
	}
	if name, v, _ := tenant.Parse("kernel_memory_bytes=256M"); name != tenant.KernelMemory || v != 256<<20 {
		t.Fatalf("parse: %s %d", name, v)
	}
	for _, bad := range []string{"cubez=1", "cubes=-1", "cubes", "cubes=x"} {
		if _, _, err := tenant.Parse(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestTenantValidate(t *testing.T) {
	for _, bad := range []tenant.Tenant{
		{Name: "1red"},
		{Name: "red", Interfaces: []string{"a/b"}},
		{Name: "red", Interfaces: []string{"c1:p0"}},
		{Name: "red", Interfaces: []string{"veth0", "veth0"}},
		{Name: "red", Quota: tenant.Quota{"bogus": 1}},
		{Name: "red", Quota: tenant.Quota{tenant.Cubes: -1}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
