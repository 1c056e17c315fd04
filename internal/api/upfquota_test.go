package api

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf"
	"github.com/edgenf/edgenf/internal/tenant"
)

// upfMemory is the kernel memory of a upf cube of the given settings, as
// its loaded maps take it.
func upfMemory(t *testing.T, config string) int64 {
	t.Helper()
	c := &cube.Cube{Name: "u", Type: "upf", Hook: datapath.XDP, Config: json.RawMessage(config)}
	obj, err := upf.Type.ObjectOf(c)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := upf.Type.SpecOf(c, obj)
	if err != nil {
		t.Fatal(err)
	}
	return int64(datapath.PreallocBytes(spec))
}

// A upf cube's kernel memory, which its tenant's kernel_memory_bytes quota
// counts, follows its max_sessions: a small one fits a quota a default one
// does not, which is refused with the numbers and leaves nothing behind; a
// change of max_sessions under a live cube is refused and changes nothing.
func TestUPFKernelMemoryFollowsMaxSessions(t *testing.T) {
	small, large := upfMemory(t, `{"max_sessions":1024}`), upfMemory(t, `{}`)
	if small <= 0 || small*64 > large {
		t.Fatalf("kernel memory of 1,024 sessions %d, of the default %d: want at most 1/64", small, large)
	}
	url, _ := tenantServer(t)
	admin, t2 := client.New("", url, adminTok), client.New("", url, t2Tok)
	limit := large // a default cube alone fits, not with a small one
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{"kernel_memory_bytes": limit}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "u1", "type": "upf", "config": map[string]any{"max_sessions": 1024}}, nil); err != nil {
		t.Fatal(err)
	}
	if u, _ := used(t, t2, "t2", tenant.KernelMemory); u != small {
		t.Fatalf("kernel memory in use %d, want the small cube's %d", u, small)
	}
	refused(t, "a default upf beside it", t2.Do("POST", "/v1/cubes", map[string]any{"name": "u2", "type": "upf"}, nil), 403,
		fmt.Sprintf("over quota kernel_memory_bytes: limit %d, in use %d, this change needs %d", limit, small, small+large))
	var got map[string]any
	refused(t, "the refused cube", t2.Do("GET", "/v1/cubes/u2", nil, &got), 404)

	refused(t, "max_sessions changed", t2.Do("PUT", "/v1/cubes/u1/config", map[string]any{"max_sessions": 2048}, nil), 409,
		"config.max_sessions", "made for 1024 sessions")
	var cfg struct {
		MaxSessions uint32 `json:"max_sessions"`
	}
	if err := t2.Do("GET", "/v1/cubes/u1/config", nil, &cfg); err != nil || cfg.MaxSessions != 1024 {
		t.Fatalf("after the refused change: max_sessions %d (%v)", cfg.MaxSessions, err)
	}
	if u, _ := used(t, t2, "t2", tenant.KernelMemory); u != small {
		t.Fatalf("kernel memory in use %d after the refused change, want %d", u, small)
	}
	// the administrator may make a large one for the tenant
	if err := admin.Do("POST", "/v1/cubes", map[string]any{"name": "u3", "type": "upf", "tenant": "t2", "config": map[string]any{"max_sessions": 262144}}, nil); err != nil {
		t.Fatal(err)
	}
	if u, _ := used(t, t2, "t2", tenant.KernelMemory); u != small+upfMemory(t, `{"max_sessions":262144}`) {
		t.Fatalf("kernel memory in use %d with a 262,144-session cube", u)
	}
}
