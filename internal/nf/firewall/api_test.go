package firewall

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/api"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// TestAPIBulkLoad10k: a PUT of a whole 10,000-rule chain through the REST API
// is applied in seconds (one Sync, one generation switch); bad lists are
// refused with the entry and field named and change nothing.
func TestAPIBulkLoad10k(t *testing.T) {
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "fw", Type: "firewall"})
	})
	const tok = "admin-0123456789abcdef"
	srv := httptest.NewServer(api.New(e, api.NewTokens(api.Token{Token: tok})))
	t.Cleanup(srv.Close)
	do := func(method, path string, body any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	rules := benchRules(10000, "udp", true)
	start := time.Now()
	code, body := do("PUT", "/v1/cubes/fw/tables/ingress", rules)
	took := time.Since(start)
	if code != 200 || !strings.Contains(strings.Join(strings.Fields(body), ""), `"entries":10000`) {
		t.Fatalf("PUT: %d %s", code, body)
	}
	t.Logf("PUT of 10,000 rules: %v", took)
	if took > 20*time.Second {
		t.Errorf("bulk load took %v", took)
	}
	v, err := e.View(tenant.Admin, "fw", "counters")
	if err != nil || len(v.([]RuleCounter)) != 10000+2 {
		t.Fatalf("counters view: %d rows, %v", len(v.([]RuleCounter)), err)
	}
	// A bad entry in a list: 400 naming it (422: an inverted range, which
	// the document cannot tell); a duplicate id: 409.
	bad := []Rule{{ID: 20001, Action: "accept"}, {ID: 20002, Proto: "tcp", Dport: "99", Sport: "x", Action: "drop"}}
	if code, body := do("POST", "/v1/cubes/fw/tables/ingress", bad); code != 400 || !strings.Contains(body, "sport") {
		t.Fatalf("bad entry: %d %s", code, body)
	}
	bad[1].Sport, bad[1].Dport = "", "99-9"
	if code, body := do("POST", "/v1/cubes/fw/tables/ingress", bad); code != 422 || !strings.Contains(body, "dport") {
		t.Fatalf("inverted range: %d %s", code, body)
	}
	dup := []Rule{{ID: 20001, Action: "accept"}, {ID: 20001, Action: "drop"}}
	if code, body := do("POST", "/v1/cubes/fw/tables/ingress", dup); code != 409 {
		t.Fatalf("duplicate id: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/cubes/fw/tables/ingress", []Rule{{ID: 5, Action: "accept"}}); code != 409 {
		t.Fatalf("existing id: %d %s", code, body)
	}
	if n := len(e.Topology().Lookup("fw").Tables["ingress"]); n != 10000 {
		t.Fatalf("%d rules after refused requests", n)
	}
}
