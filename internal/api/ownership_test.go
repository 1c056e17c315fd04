package api

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/tenant"
)

// An interface is given to one tenant: given to two, each could attach and
// capture at it and see the other's traffic. A record that gives a tenant
// another's interface is refused (409, naming the other), nothing changed;
// so is an engine whose token-file tenants share one.
func TestAnInterfaceIsOneTenants(t *testing.T) {
	url, _ := tenantServer(t)
	admin := client.New("", url, adminTok)
	if err := admin.Do("PUT", "/v1/tenants/t3", map[string]any{"interfaces": []string{"veth-x"}}, nil); err != nil {
		t.Fatal(err)
	}
	refused(t, "t4 given t3's interface", admin.Do("PUT", "/v1/tenants/t4", map[string]any{"interfaces": []string{"veth-y", "veth-x"}}, nil), 409, "interface veth-x is tenant t3's")
	refused(t, "t4 after the refusal", admin.Do("GET", "/v1/tenants/t4", nil, nil), 404)
	refused(t, "t2 given the token file's t1's interface", admin.Do("PUT", "/v1/tenants/t2", map[string]any{"interfaces": []string{"veth-t1"}}, nil), 409, "interface veth-t1 is tenant t1's")
	if err := admin.Do("PUT", "/v1/tenants/t3", map[string]any{"interfaces": []string{"veth-x", "veth-z"}}, nil); err != nil {
		t.Fatalf("t3's record given again with its own interface: %v", err)
	}
	cfg := engine.Config{Tenants: []tenant.Tenant{{Name: "a", Interfaces: []string{"veth-s"}}, {Name: "b", Interfaces: []string{"veth-s"}}},
		PinRoot: filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfo-%d", os.Getpid())), StateFile: filepath.Join(t.TempDir(), "state.json")}
	// a daemon that does not start keeps the pins of its previous run
	// (traffic goes on): this one had none, so its pin root goes here
	t.Cleanup(func() { os.RemoveAll(cfg.PinRoot) })
	e, err := engine.Open(cfg)
	if err == nil {
		e.Destroy()
		t.Fatal("an engine whose tenants a and b share interface veth-s opened")
	}
	if !strings.Contains(err.Error(), "interface veth-s is tenant") {
		t.Errorf("the engine's refusal: %v", err)
	}
}
