package api

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
)

const (
	adminTok = "admin-0123456789abcdef"
	t1Tok    = "tenant1-0123456789abcdef"
	t2Tok    = "tenant2-0123456789abcdef"
)

func server(t testing.TB) string {
	eng := nftest.Engine(t)
	srv := httptest.NewServer(New(eng, NewTokens(Token{Token: adminTok}, Token{Token: t1Tok, Tenant: "t1"}, Token{Token: t2Tok, Tenant: "t2"})))
	t.Cleanup(srv.Close)
	return srv.URL
}

func code(err error) int {
	var ae *client.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	if err == nil {
		return 200
	}
	return -1
}

func TestTCPNeedsAValidToken(t *testing.T) {
	url := server(t)
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		if c := code(client.New("", url, tok).Do("GET", "/v1/cubes", nil, nil)); c != 401 {
			t.Errorf("token %q: HTTP %d, want 401", tok, c)
		}
	}
	if err := client.New("", url, adminTok).Do("GET", "/v1/cubes", nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestTenantTokensSeeOnlyTheirCubes(t *testing.T) {
	url := server(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	if err := admin.Do("POST", "/v1/cubes", map[string]string{"name": "a1", "type": "portfwd", "tenant": "t1"}, nil); err != nil {
		t.Fatal(err)
	}
	// A tenant's cube is created in its own tenant whatever it asks.
	var made struct{ Tenant string }
	if err := t2.Do("POST", "/v1/cubes", map[string]string{"name": "b1", "type": "portfwd"}, &made); err != nil || made.Tenant != "t2" {
		t.Fatalf("tenant create: %v %+v", err, made)
	}
	if c := code(t2.Do("POST", "/v1/cubes", map[string]string{"name": "b2", "type": "portfwd", "tenant": "t1"}, nil)); c != 403 {
		t.Fatalf("creating in another tenant: HTTP %d", c)
	}
	var list []struct{ Name string }
	if err := t1.Do("GET", "/v1/cubes", nil, &list); err != nil || len(list) != 1 || list[0].Name != "a1" {
		t.Fatalf("t1 sees %+v (%v)", list, err)
	}
	if c := code(t1.Do("GET", "/v1/cubes/b1", nil, nil)); c != 404 {
		t.Fatalf("t1 reading t2's cube: HTTP %d", c)
	}
	if c := code(t1.Do("DELETE", "/v1/cubes/b1", nil, nil)); c != 404 {
		t.Fatalf("t1 deleting t2's cube: HTTP %d", c)
	}
	if c := code(t1.Do("GET", "/v1/topology", nil, nil)); c != 403 {
		t.Fatalf("tenant reading the whole topology: HTTP %d", c)
	}
	if err := admin.Do("GET", "/v1/cubes", nil, &list); err != nil || len(list) != 2 {
		t.Fatalf("admin sees %+v", list)
	}
}

func TestOpenAPIDescribesEveryTypesTables(t *testing.T) {
	url := server(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := client.New("", url, adminTok).Do("GET", "/v1/openapi.json", nil, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	rules := doc.Paths["/v1/nf/portfwd/{cube}/tables/rules"]
	if rules == nil || rules["post"] == nil || !strings.Contains(string(rules["post"]), `"in_port"`) {
		t.Fatalf("portfwd rules path missing or without schema: %s", rules["post"])
	}
	if doc.Paths["/v1/nf/monitor/{cube}/views/counters"] == nil || doc.Paths["/v1/nf/monitor/{cube}/actions/reset"] == nil {
		t.Fatal("monitor view/action paths missing")
	}
}

func TestLoadTokensRefusesLooseFiles(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "tokens.json")
	os.WriteFile(f, []byte(`{"tokens":[{"token":"0123456789abcdef0"}]}`), 0o644)
	if _, err := LoadTokens(f); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable token file: %v", err)
	}
	os.Chmod(f, 0o600)
	if _, err := LoadTokens(f); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, []byte(`{"tokens":[{"token":"short"}]}`), 0o600)
	if _, err := LoadTokens(f); err == nil {
		t.Fatal("short token accepted")
	}
}
