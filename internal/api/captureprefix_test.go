package api

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
)

// A tenant with a cube prefix captures at its own points: the capture's
// cube bears its prefix. No tenant's prefix may claim the names of
// captures' cubes (capture-...), which would refuse everyone else's
// captures.
func TestCapturesAndCubePrefixes(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t2 := client.New("", url, adminTok), client.New("", url, t2Tok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"cube_prefix": "t2-"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "t2-a", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, "POST", url+"/v1/captures", t2Tok, strings.NewReader(`{"point":"t2-a:p0","count":1,"duration":"1s"}`)); code != 200 {
		t.Fatalf("t2 captures at its own port: %d %.300s", code, body)
	}
	before := topologyOf(t, admin)
	for _, p := range []string{"capture-", "cap", "capture-a", "c"} {
		refused(t, "prefix "+p, admin.Do("PUT", "/v1/tenants/t3", map[string]any{"cube_prefix": p}, nil), 409, "names of the cubes the daemon attaches for captures")
	}
	refused(t, "t3 after the refusals", admin.Do("GET", "/v1/tenants/t3", nil, nil), 404)
	if after := topologyOf(t, admin); after != before {
		t.Fatalf("the refusals changed the state:\n%s", after)
	}
	if code, body := do(t, "POST", url+"/v1/captures", adminTok, strings.NewReader(`{"point":"t2-a:p0","count":1,"duration":"1s"}`)); code != 200 {
		t.Fatalf("the administrator captures at t2's port: %d %.300s", code, body)
	}
}
