package api

import (
	"bytes"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
)

// fuzzRoutes are the requests with JSON bodies.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/cubes"},
	{"PATCH", "/v1/cubes/c1"},
	{"PUT", "/v1/cubes/c1/config"},
	{"POST", "/v1/cubes/c1/ports"},
	{"PATCH", "/v1/cubes/c1/ports/p0"},
	{"POST", "/v1/cubes/c1/ports/p0/inject"},
	{"POST", "/v1/cubes/c1/tables/rules"},
	{"PUT", "/v1/cubes/c1/tables/rules"},
	{"PUT", "/v1/cubes/c1/tables/rules/p0"},
	{"POST", "/v1/cubes/c1/swap"},
	{"POST", "/v1/cubes/m1/actions/reset"},
	{"POST", "/v1/attachments"},
	{"PUT", "/v1/tenants/t1"},
	{"PUT", "/v1/topology?dry_run=true"},
	{"PUT", "/v1/topology"},
}

// FuzzTenantRequests sends arbitrary JSON bodies to every route that takes
// one, as a tenant (which owns no interface: nothing a body says can reach
// the host's interfaces). No answer is a 5xx, and a refused request leaves
// the state as it was.
func FuzzTenantRequests(f *testing.F) {
	url := server(f)
	admin, t1 := client.New("", url, adminTok), client.New("", url, t1Tok)
	if err := t1.Do("POST", "/v1/cubes", map[string]any{"name": "c1", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}, {"name": "p1"}}}, nil); err != nil {
		f.Fatal(err)
	}
	if err := t1.Do("POST", "/v1/cubes", map[string]any{"name": "m1", "type": "monitor"}, nil); err != nil {
		f.Fatal(err)
	}
	for i, body := range []string{
		`{"name": "c2", "type": "portfwd", "ports": [{"name": "p0", "peer": "c1:p1"}]}`,
		`{"name": "c2", "type": "p4", "config": {"program": "/etc/passwd"}}`,
		`{"name": "c2", "type": "portfwd", "tenant": "t2"}`,
		`{"tenant": "t2"}`,
		`{"config": {"x": 1}}`,
		`{}`,
		`{"name": "p2", "index": -1, "mac": "ff:ff:ff:ff:ff:ff"}`,
		`{"name": "p2", "addresses": ["255.255.255.255/32"]}`,
		`{"peer": "eth0"}`,
		`{"peer": "c1:p1", "mac": "02:00:00:00:00:01", "addresses": ["198.18.0.1/24"]}`,
		`{"frame": "ffffffffffff020000000001080045000014000000004011000000000000000000"}`,
		`{"in_port": "p0", "out_port": "p1"}`,
		`[{"in_port": "p0", "out_port": "p1"}, {"in_port": "p1", "out_port": "p0"}]`,
		`[{"in_port": "p0", "out_port": "p1"}, {"in_port": "p0", "out_port": "p1"}]`,
		`{"object": "f0VMRg=="}`,
		`null`,
		`{"cube": "m1", "point": "c1:p0"}`,
		`{"cube": "m1", "point": "lo", "position": "first"}`,
		`{"interfaces": ["eth0"], "quota": {"cubes": 1}}`,
		`{"cubes": []}`,
		`{"cubes": [{"name": "x", "type": "monitor"}], "attachments": [{"cube": "x", "point": "eth0"}]}`,
		"\x00\xff{",
		`{"name": "c2", "type": "portfwd", "ports": [` + string(bytes.Repeat([]byte(`{"name": "p0"},`), 70)) + `{"name": "p1"}]}`,
	} {
		f.Add(uint8(i), []byte(body))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		before := topologyOf(t, admin)
		code, msg := do(t, r.method, url+r.path, t1Tok, bytes.NewReader(body))
		if code >= 500 {
			t.Fatalf("%s %s %q: %d %s", r.method, r.path, body, code, msg)
		}
		if code >= 400 {
			if after := topologyOf(t, admin); after != before {
				t.Fatalf("%s %s %q: refused (%d %s) but the state changed", r.method, r.path, body, code, msg)
			}
		}
	})
}
