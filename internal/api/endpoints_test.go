package api

import (
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/endpoint"
	"github.com/edgenf/edgenf/internal/netlab"
)

// Endpoints are the administrator's (the CNI plugin's) to make and remove:
// a tenant's token reads those on its own cubes and nothing else, cannot
// plug or unplug a pod, and only the pod's tenant acts on its interface.
func TestEndpointsAreTheAdministrators(t *testing.T) {
	lab := netlab.NewT(t)
	pod, _, err := lab.RootVeth("p0", "p1")
	if err != nil {
		t.Fatal(err)
	}
	url, _ := tenantServer(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	for _, c := range []struct {
		cl   *client.Client
		name string
	}{{t1, "a1"}, {t2, "b1"}} {
		if err := c.cl.Do("POST", "/v1/cubes", map[string]any{"name": c.name, "type": "portfwd"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.cl.Do("POST", "/v1/cubes", map[string]any{"name": c.name + "m", "type": "monitor"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ep := endpoint.Endpoint{Name: "enf000000000001", Tenant: "t1", Cube: "a1", Interface: pod, Pod: &endpoint.Pod{Namespace: "t1", Name: "web-0"}}

	// a tenant can neither plug a pod in (its own cube or not) nor
	// take the administrator's place
	other := ep
	other.Cube = "b1"
	refused(t, "t1 plugs a pod into its cube", t1.Do("PUT", "/v1/endpoints/"+ep.Name, ep, nil), 403, "administrator")
	refused(t, "t1 plugs a pod into t2's cube", t1.Do("PUT", "/v1/endpoints/"+ep.Name, other, nil), 403, "administrator")
	// the administrator cannot put one tenant's pod on another's cube
	refused(t, "t1's pod on t2's cube", admin.Do("PUT", "/v1/endpoints/"+ep.Name, other, nil), 409, "tenant t2's, not tenant t1's")
	if err := admin.Do("PUT", "/v1/endpoints/"+ep.Name, ep, nil); err != nil {
		t.Fatal(err)
	}

	var list []endpoint.Endpoint
	if err := t1.Do("GET", "/v1/endpoints", nil, &list); err != nil || len(list) != 1 || list[0].Name != ep.Name {
		t.Fatalf("t1's endpoints: %v %v", list, err)
	}
	if err := t2.Do("GET", "/v1/endpoints", nil, &list); err != nil || len(list) != 0 {
		t.Fatalf("t2 sees t1's endpoints: %v %v", list, err)
	}
	refused(t, "t2 reads t1's endpoint", t2.Do("GET", "/v1/endpoints/"+ep.Name, nil, nil), 404, "no endpoint named")
	refused(t, "t2 unplugs t1's pod", t2.Do("DELETE", "/v1/endpoints/"+ep.Name, nil, nil), 403, "administrator")
	refused(t, "t1 unplugs its pod", t1.Do("DELETE", "/v1/endpoints/"+ep.Name, nil, nil), 403, "administrator")
	// the pod's interface is t1's while the endpoint lasts, never t2's
	refused(t, "t2 attaches to t1's pod", t2.Do("POST", "/v1/attachments", map[string]any{"cube": "b1m", "point": pod}, nil), 403, "not assigned")
	refused(t, "t2 peers with t1's pod", t2.Do("POST", "/v1/cubes/b1/ports", map[string]any{"name": "x", "peer": pod}, nil), 403, "not assigned")
	if err := t1.Do("POST", "/v1/attachments", map[string]any{"cube": "a1m", "point": pod}, nil); err != nil {
		t.Fatalf("t1 attaches a monitor to its pod: %v", err)
	}

	if err := admin.Do("DELETE", "/v1/endpoints/"+ep.Name, nil, nil); err != nil {
		t.Fatal(err)
	}
	refused(t, "t1 attaches to the gone pod's interface", t1.Do("POST", "/v1/attachments", map[string]any{"cube": "a1m", "point": pod}, nil), 403, "not assigned")
}
