package api

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/slicer"
)

// A tenant may run a slicer on what it owns, but its slices are its own: a
// slice of another tenant (or of none, the administrator's) would steer the
// tenant's entry traffic into that owner's chain and take the chain's
// return traffic, and a chain entry of someone else's cube would do the
// same. Each is refused as if the cube did not exist, state unchanged.
func TestTenantSlicesLeadOnlyIntoItsOwnChains(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	two := []map[string]any{{"name": "p0"}, {"name": "p1"}}
	for _, c := range []struct {
		cl   *client.Client
		body map[string]any
	}{
		{t2, map[string]any{"name": "secret-b1", "type": "portfwd", "hook": "tc", "ports": two}},
		{admin, map[string]any{"name": "adm", "type": "portfwd", "hook": "tc", "ports": two}},
		{t1, map[string]any{"name": "a1", "type": "portfwd", "hook": "tc", "ports": two}},
		{t1, map[string]any{"name": "s1", "type": "slicer", "hook": "tc", "ports": []map[string]any{{"name": "up"}}, "config": map[string]any{"uplink": "up"}}},
	} {
		if err := c.cl.Do("POST", "/v1/cubes", c.body, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := t1.Do("POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "mine", "id": 1, "tenant": "t1", "chain": "a1:p0"}, nil); err != nil {
		t.Fatalf("a slice into the tenant's own chain: %v", err)
	}
	refuseEach(t, t1, admin, []refusal{
		{"a slice of another tenant into its cube", "POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "x", "id": 2, "tenant": "t2", "chain": "secret-b1:p0"}, 403, "own tenant only: set tenant t1"},
		{"an own slice into another tenant's cube", "POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "x", "id": 2, "tenant": "t1", "chain": "secret-b1:p1"}, 404, `no cube named "secret-b1"`},
		{"an own slice into a cube that is not there", "POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "x", "id": 2, "tenant": "t1", "chain": "ghost:p0"}, 404, `no cube named "ghost"`},
		{"a slice of no tenant into the administrator's cube", "POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "x", "id": 2, "chain": "adm:p0"}, 403, "set tenant t1"},
		{"an own slice into the administrator's cube", "POST", "/v1/cubes/s1/tables/slices", map[string]any{"name": "x", "id": 2, "tenant": "t1", "chain": "adm:p0"}, 404, `no cube named "adm"`},
		{"a slice given to another tenant", "PUT", "/v1/cubes/s1/tables/slices/mine", map[string]any{"name": "mine", "id": 1, "tenant": "t2", "chain": "a1:p0"}, 403, "own tenant only"},
		{"a slice turned into another tenant's cube", "PUT", "/v1/cubes/s1/tables/slices/mine", map[string]any{"name": "mine", "id": 1, "tenant": "t1", "chain": "secret-b1:p0"}, 404, `no cube named "secret-b1"`},
	}, "t2", "administrator's")
	// t2 cannot capture (nor otherwise find) a slice of t1's slicer.
	refused(t, "capture another tenant's slice", t2.Do("POST", "/v1/captures", map[string]any{"slice": "s1/mine", "count": 1}, nil), 404)
}

// An interface given to a tenant that another owner's slicer shapes (it
// owns the interface's root qdisc) is in use: the tenant's slicer may not
// shape it too, which would replace that HTB tree and the other slices'
// guarantees with its own. Refused without naming the other slicer, state
// unchanged; an interface nobody else shapes the tenant may shape.
func TestTenantSlicerCannotTakeOverAnotherSlicersEgress(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t2 := client.New("", url, adminTok), client.New("", url, t2Tok)
	lab := netlab.NewT(t)
	shaped, _, err := lab.RootVeth("eg", "egp")
	if err != nil {
		t.Fatal(err)
	}
	free, _, err := lab.RootVeth("fr", "frp")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"interfaces": []string{shaped, free}}, nil); err != nil {
		t.Fatal(err)
	}
	slicer := func(name, iface string) map[string]any {
		return map[string]any{"name": name, "type": "slicer", "hook": "tc", "ports": []map[string]any{{"name": "up"}},
			"config": map[string]any{"uplink": "up", "egress": []map[string]any{{"interface": iface, "rate_bps": 100000000}}}}
	}
	if err := admin.Do("POST", "/v1/cubes", slicer("secret-edge", shaped), nil); err != nil {
		t.Fatal(err)
	}
	before := topologyOf(t, admin)
	err = t2.Do("POST", "/v1/cubes", slicer("mine", shaped), nil)
	refused(t, "t2's slicer shaping the administrator's shaped interface", err, 409, "interface "+shaped+" is in use")
	if err != nil && strings.Contains(err.Error(), "secret-edge") {
		t.Errorf("the refusal names the other slicer: %v", err)
	}
	if after := topologyOf(t, admin); after != before {
		t.Fatalf("the refusal changed the state:\n%s", after)
	}
	if err := t2.Do("POST", "/v1/cubes", slicer("mine", free), nil); err != nil {
		t.Fatalf("t2's slicer shaping an interface nobody else shapes: %v", err)
	}
	refused(t, "t2's slicer moved onto the shaped interface", t2.Do("PUT", "/v1/cubes/mine/config", map[string]any{"uplink": "up", "egress": []map[string]any{{"interface": shaped, "rate_bps": 100000000}}}, nil), 409, "is in use")
}

// Two slicers shaping one interface would fight over its root qdisc: the
// second's HTB tree replaces the first's, and with it the first's slices'
// guaranteed minimums and priorities. The administrator is refused a
// second (409, naming the interface and the slicer that shapes it), by a
// new cube, a settings change or a declarative apply holding both; the
// state is unchanged each time.
func TestOneSlicerShapesAnInterface(t *testing.T) {
	url, _ := tenantServer(t)
	admin := client.New("", url, adminTok)
	lab := netlab.NewT(t)
	shaped, _, err := lab.RootVeth("eg", "egp")
	if err != nil {
		t.Fatal(err)
	}
	free, _, err := lab.RootVeth("fr", "frp")
	if err != nil {
		t.Fatal(err)
	}
	settings := func(iface string) map[string]any {
		return map[string]any{"uplink": "up", "egress": []map[string]any{{"interface": iface, "rate_bps": 100000000}}}
	}
	slicer := func(name, iface string) map[string]any {
		return map[string]any{"name": name, "type": "slicer", "hook": "tc", "ports": []map[string]any{{"name": "up"}}, "config": settings(iface)}
	}
	if err := admin.Do("POST", "/v1/cubes", slicer("edge-a", shaped), nil); err != nil {
		t.Fatal(err)
	}
	before := topologyOf(t, admin)
	refused(t, "a second slicer shaping the interface", admin.Do("POST", "/v1/cubes", slicer("edge-b", shaped), nil),
		409, "interface "+shaped+" is already shaped by cube edge-a")
	if after := topologyOf(t, admin); after != before {
		t.Fatalf("the refusal changed the state:\n%s", after)
	}
	if err := admin.Do("POST", "/v1/cubes", slicer("edge-b", free), nil); err != nil {
		t.Fatalf("a second slicer shaping another interface: %v", err)
	}
	before = topologyOf(t, admin)
	refused(t, "a slicer moved onto the shaped interface", admin.Do("PUT", "/v1/cubes/edge-b/config", settings(shaped), nil),
		409, "interface "+shaped+" is already shaped by cube edge-a")
	both := map[string]any{"cubes": []map[string]any{slicer("edge-a", free), slicer("edge-b", free)}}
	refused(t, "a declarative apply of two slicers shaping one interface", admin.Do("PUT", "/v1/topology", both, nil),
		409, "interface "+free+" is already shaped by cube edge-a")
	if after := topologyOf(t, admin); after != before {
		t.Fatalf("a refusal changed the state:\n%s", after)
	}
}
