package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/ddos"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// tenantServer serves an engine whose token file declares tenant "t1"
// (given interface veth-t1) besides the API-declared ones; t2 has no record.
func tenantServer(t *testing.T) (url string, eng *engine.Engine) {
	toks := NewTokens(Token{Token: adminTok}, Token{Token: t1Tok, Tenant: "t1"}, Token{Token: t2Tok, Tenant: "t2"})
	toks.Tenants = []tenant.Tenant{{Name: "t1", Interfaces: []string{"veth-t1"}}}
	eng = nftest.EngineWith(t, engine.Config{Tenants: toks.Tenants})
	srv := httptest.NewServer(New(eng, toks))
	t.Cleanup(srv.Close)
	return srv.URL, eng
}

// refusal is a request a tenant must be refused, with the code and a
// text the refusal must have.
type refusal struct {
	what         string
	method, path string
	body         any
	code         int
	want         string
}

// refuseEach makes each request as cl and checks it is refused as said,
// that the refusal has none of the secrets (what it must not tell), and
// that the state (the administrator's topology) did not change.
func refuseEach(t *testing.T, cl, admin *client.Client, cases []refusal, secrets ...string) {
	t.Helper()
	before := topologyOf(t, admin)
	for _, c := range cases {
		err := cl.Do(c.method, c.path, c.body, nil)
		refused(t, c.what, err, c.code, c.want)
		for _, secret := range secrets {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the refusal tells %q: %v", c.what, secret, err)
			}
		}
		if after := topologyOf(t, admin); after != before {
			t.Fatalf("%s changed the state:\n%s\n%s", c.what, before, after)
		}
	}
}

// refused checks err is an API error with code whose text has every want.
func refused(t *testing.T, what string, err error, code int, want ...string) {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != code {
		t.Errorf("%s: %v, want HTTP %d", what, err, code)
		return
	}
	for _, w := range want {
		if !strings.Contains(ae.Error(), w) {
			t.Errorf("%s: %q lacks %q", what, ae.Error(), w)
		}
	}
}

func topologyOf(t testing.TB, admin *client.Client) string {
	t.Helper()
	var raw json.RawMessage
	if err := admin.Do("GET", "/v1/topology", nil, &raw); err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// Everything a tenant names outside what it owns is refused as if it did
// not exist, changes nothing, and the refusal never names the other
// tenant's cubes.
func TestTenantStaysInsideWhatItOwns(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	for _, c := range []struct {
		cl   *client.Client
		body map[string]any
	}{
		{t1, map[string]any{"name": "a1", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}, {"name": "p1"}}}},
		{t1, map[string]any{"name": "am", "type": "monitor"}},
		{t2, map[string]any{"name": "secret-b1", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}}}},
		{admin, map[string]any{"name": "adm", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}}}},
	} {
		if err := c.cl.Do("POST", "/v1/cubes", c.body, nil); err != nil {
			t.Fatal(err)
		}
	}
	refuseEach(t, t1, admin, []refusal{
		{"peer with another tenant's port", "PATCH", "/v1/cubes/a1/ports/p1", map[string]any{"peer": "secret-b1:p0"}, 404, `no cube named "secret-b1"`},
		{"peer with an administrator's port", "PATCH", "/v1/cubes/a1/ports/p1", map[string]any{"peer": "adm:p0"}, 404, `no cube named "adm"`},
		{"new port peered with another tenant's", "POST", "/v1/cubes/a1/ports", map[string]any{"name": "p2", "peer": "secret-b1:p0"}, 404, `no cube named "secret-b1"`},
		{"cube created peered with another tenant's", "POST", "/v1/cubes", map[string]any{"name": "a2", "type": "portfwd", "ports": []map[string]any{{"name": "p0", "peer": "secret-b1:p0"}}}, 404, `no cube named "secret-b1"`},
		{"peer with an interface not given", "PATCH", "/v1/cubes/a1/ports/p1", map[string]any{"peer": "eth0"}, 403, `interface "eth0" is not assigned to tenant t1`},
		{"attach to another tenant's port", "POST", "/v1/attachments", map[string]any{"cube": "am", "point": "secret-b1:p0"}, 404, `no cube named "secret-b1"`},
		{"attach to an interface not given", "POST", "/v1/attachments", map[string]any{"cube": "am", "point": "eth0"}, 403, "not assigned"},
		{"attach another tenant's cube", "POST", "/v1/attachments", map[string]any{"cube": "secret-b1", "point": "a1:p0"}, 404, `no cube named "secret-b1"`},
		{"mirror to an interface not given", "POST", "/v1/cubes", map[string]any{"name": "dd", "type": "ddos", "config": map[string]any{"scan": map[string]any{}, "mirror_interface": "eth0"}}, 403, "not assigned"},
		{"move a cube to another tenant", "PATCH", "/v1/cubes/a1", map[string]any{"tenant": "t2"}, 403, "administrator"},
		{"create a cube for another tenant", "POST", "/v1/cubes", map[string]any{"name": "a3", "type": "portfwd", "tenant": "t2"}, 403, "own tenant"},
		{"swap in an object", "POST", "/v1/cubes/a1/swap", map[string]any{"object": "f0VMRg=="}, 403, "only an administrator"},
		{"read another tenant's cube", "GET", "/v1/cubes/secret-b1", nil, 404, `no cube named "secret-b1"`},
		{"detach another tenant's cube", "DELETE", "/v1/attachments/secret-b1", nil, 404, `no cube named "secret-b1"`},
		{"inject into another tenant's port", "POST", "/v1/cubes/secret-b1/ports/p0/inject", map[string]any{"frame": strings.Repeat("00", 60)}, 404, `no cube named "secret-b1"`},
		{"read another tenant's record", "GET", "/v1/tenants/t2", nil, 404, ""},
		{"declare a tenant", "PUT", "/v1/tenants/t1", map[string]any{"interfaces": []string{"eth0"}}, 403, "administrator"},
		{"read the whole topology", "GET", "/v1/topology", nil, 403, ""},
	}, "b1:")
	// What a tenant may do still works.
	if err := t1.Do("POST", "/v1/attachments", map[string]any{"cube": "am", "point": "a1:p0"}, nil); err != nil {
		t.Fatalf("attach to own port: %v", err)
	}
	if err := t1.Do("POST", "/v1/cubes/a1/swap", map[string]any{}, nil); err != nil {
		t.Fatalf("swap to the NF type's own program: %v", err)
	}
}

func TestTenantRecords(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	refused(t, "change a token-file tenant", admin.Do("PUT", "/v1/tenants/t1", map[string]any{"interfaces": []string{"x0"}}, nil), 409, "token file")
	var st engine.TenantStatus
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"interfaces": []string{"veth-t2"}, "quota": map[string]int64{"cubes": 1}}, &st); err != nil {
		t.Fatal(err)
	}
	if st.Source != "api" || !st.Owns("veth-t2") {
		t.Fatalf("declared: %+v", st)
	}
	refused(t, "unknown quota", admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{"cubez": 1}}, nil), 400, "quota.cubez")
	refused(t, "name mismatch", admin.Do("PUT", "/v1/tenants/t2", map[string]any{"name": "t3"}, nil), 400, "name")
	var list []engine.TenantStatus
	if err := t2.Do("GET", "/v1/tenants", nil, &list); err != nil || len(list) != 1 || list[0].Name != "t2" {
		t.Fatalf("t2 lists %+v (%v)", list, err)
	}
	if err := admin.Do("GET", "/v1/tenants", nil, &list); err != nil || len(list) != 2 {
		t.Fatalf("admin lists %+v (%v)", list, err)
	}
	if err := t1.Do("GET", "/v1/tenants/t1", nil, &st); err != nil || st.Source != "token-file" {
		t.Fatalf("t1 reads itself: %+v (%v)", st, err)
	}
	if err := admin.Do("DELETE", "/v1/tenants/t2", nil, nil); err != nil {
		t.Fatal(err)
	}
	st = engine.TenantStatus{}
	if err := t2.Do("GET", "/v1/tenants/t2", nil, &st); err != nil || st.Source != "none" || len(st.Interfaces) != 0 {
		t.Fatalf("after delete: %+v (%v)", st, err)
	}
}

// used returns a quota's usage and limit as the API reports them.
func used(t *testing.T, cl *client.Client, name, quota string) (int64, int64) {
	t.Helper()
	var st engine.TenantStatus
	if err := cl.Do("GET", "/v1/tenants/"+name, nil, &st); err != nil {
		t.Fatal(err)
	}
	for _, q := range st.Quotas {
		if q.Name == quota {
			if q.Used == nil {
				return -1, q.Limit
			}
			return *q.Used, q.Limit
		}
	}
	t.Fatalf("no quota %s", quota)
	return 0, 0
}

func TestQuotasRefuseWhatGoesOver(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t2 := client.New("", url, adminTok), client.New("", url, t2Tok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{
		"cubes": 3, "ports": 2, "attachments": 0, "table_entries": 3, "kernel_memory_bytes": 1 << 20}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "c1", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}, {"name": "p1"}}}, nil); err != nil {
		t.Fatal(err)
	}
	refused(t, "ports", t2.Do("POST", "/v1/cubes/c1/ports", map[string]any{"name": "p2"}, nil), 403, "over quota ports: limit 2, in use 2, this change needs 3")
	refused(t, "kernel memory", t2.Do("POST", "/v1/cubes", map[string]any{"name": "dd", "type": "ddos"}, nil), 403, "over quota kernel_memory_bytes: limit 1048576")
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "m1", "type": "monitor"}, nil); err != nil {
		t.Fatal(err)
	}
	refused(t, "attachments", t2.Do("POST", "/v1/attachments", map[string]any{"cube": "m1", "point": "c1:p0"}, nil), 403, "over quota attachments: limit 0")
	rules := []map[string]string{{"in_port": "p0", "out_port": "p1"}, {"in_port": "p1", "out_port": "p0"}}
	if err := t2.Do("POST", "/v1/cubes/c1/tables/rules", rules, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "c2", "type": "portfwd"}, nil); err != nil {
		t.Fatal(err)
	}
	refused(t, "cubes", t2.Do("POST", "/v1/cubes", map[string]any{"name": "c3", "type": "portfwd"}, nil), 403, "over quota cubes: limit 3, in use 3, this change needs 4")
	if u, l := used(t, t2, "t2", tenant.TableEntries); u != 2 || l != 3 {
		t.Fatalf("table entries %d/%d, want 2/3", u, l)
	}
	if u, l := used(t, t2, "t2", tenant.Cubes); u != 3 || l != 3 {
		t.Fatalf("cubes %d/%d, want 3/3", u, l)
	}
	if u, _ := used(t, t2, "t2", tenant.KernelMemory); u <= 0 || u > 1<<20 {
		t.Fatalf("kernel memory in use: %d", u)
	}
	// The administrator is not bound by a tenant's quotas, and a tenant
	// over its limit may still shrink.
	if err := admin.Do("POST", "/v1/cubes", map[string]any{"name": "c4", "type": "portfwd", "tenant": "t2"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("DELETE", "/v1/cubes/c4", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// Table entries of tenants are counted on the entry path too (one entry at a
// time, and a bulk add all or nothing).
func TestEntryQuota(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t2 := client.New("", url, adminTok), client.New("", url, t2Tok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{"table_entries": 3}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "dd", "type": "ddos"}, nil); err != nil {
		t.Fatal(err)
	}
	add := func(prefixes ...string) error {
		var list []map[string]string
		for _, p := range prefixes {
			list = append(list, map[string]string{"prefix": p})
		}
		return t2.Do("POST", "/v1/cubes/dd/tables/blacklist_src", list, nil)
	}
	refused(t, "bulk add over", add("198.18.0.1/32", "198.18.0.2/32", "198.18.0.3/32", "198.18.0.4/32"), 403, "over quota table_entries: limit 3, in use 0, this change needs 4")
	if err := add("198.18.0.1/32", "198.18.0.2/32"); err != nil {
		t.Fatal(err)
	}
	if err := add("198.18.0.3/32"); err != nil {
		t.Fatal(err)
	}
	refused(t, "one more", add("198.18.0.4/32"), 403, "over quota table_entries: limit 3, in use 3, this change needs 4")
	if err := t2.Do("DELETE", "/v1/cubes/dd/tables/blacklist_src/198.18.0.1%2F32", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := add("198.18.0.4/32"); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if u, _ := used(t, t2, "t2", tenant.TableEntries); u != 3 {
		t.Fatalf("entries in use: %d", u)
	}
}

func do(t testing.TB, method, url, token string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Error *client.Error }
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		return resp.StatusCode, e.Error.Error() // field: message
	}
	return resp.StatusCode, string(b)
}

func TestRequestQuotas(t *testing.T) {
	url, _ := tenantServer(t)
	admin := client.New("", url, adminTok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"quota": map[string]int64{"request_body_bytes": 1024, "concurrent_requests": 1}}, nil); err != nil {
		t.Fatal(err)
	}
	big := `{"name": "c1", "type": "portfwd", "ports": [` + strings.Repeat(`{"name": "p0"},`, 100) + `{"name": "p1"}]}`
	if code, body := do(t, "POST", url+"/v1/cubes", t2Tok, strings.NewReader(big)); code != 413 || !strings.Contains(body, "over quota request_body_bytes: limit 1024") {
		t.Fatalf("big body: %d %s", code, body)
	}
	// A request whose body is still coming holds t2's one slot.
	pr, pw := io.Pipe()
	first := make(chan int)
	go func() {
		code, _ := do(t, "POST", url+"/v1/cubes", t2Tok, pr)
		first <- code
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := do(t, "GET", url+"/v1/cubes", t2Tok, nil)
		if code == 429 {
			if !strings.Contains(body, "over quota concurrent_requests: limit 1, in use 1") {
				t.Fatalf("429 body: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a second request while one is in flight was served")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Other tenants are not affected.
	if code, _ := do(t, "GET", url+"/v1/cubes", t1Tok, nil); code != 200 {
		t.Fatalf("t1 while t2 is busy: %d", code)
	}
	pw.Write([]byte(`{"name": "c1", "type": "portfwd"}`))
	pw.Close()
	if code := <-first; code != 201 {
		t.Fatalf("the slow request: %d", code)
	}
	if code, _ := do(t, "GET", url+"/v1/cubes", t2Tok, nil); code != 200 {
		t.Fatalf("after the slow request: %d", code)
	}
}

// Foot-guns: each is a 400 that changes nothing.
func TestFootGunsAreRefused(t *testing.T) {
	url := server(t)
	admin := client.New("", url, adminTok)
	if err := admin.Do("POST", "/v1/cubes", map[string]any{"name": "c1", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}}}, nil); err != nil {
		t.Fatal(err)
	}
	before := topologyOf(t, admin)
	doc := []byte(`{"cubes": []}`)
	for _, c := range []struct {
		method, path, body string
		want               string
	}{
		{"PUT", "/v1/topology?dry_run=maybe", string(doc), `dry_run: "maybe" is not a boolean`},
		{"PUT", "/v1/topology?dry_run=yes", string(doc), "not a boolean"},
		{"PUT", "/v1/topology?dry_run=1", string(doc), "not a boolean"},
		{"PUT", "/v1/topology?dryrun=true", string(doc), `unknown query parameter "dryrun"`},
		{"PUT", "/v1/topology?dry_run=true&dry_run=false", string(doc), "given 2 times"},
		{"PUT", "/v1/topology", `{}`, "cubes: required"},
		{"PUT", "/v1/topology", `{"cubes": null}`, "cubes: required"},
		{"GET", "/v1/cubes?all=1", "", `unknown query parameter "all"`},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "index": -1}`, "index: port index -1 is negative"},
		{"POST", "/v1/cubes", `{"name": "c2", "type": "portfwd", "ports": [{"name": "p0", "index": -1}]}`, "ports[0].index"},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "mac": "ff:ff:ff:ff:ff:ff"}`, "multicast or broadcast MAC"},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "mac": "01:00:5e:00:00:01"}`, "multicast or broadcast MAC"},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "mac": "00:00:00:00:00:00"}`, "zero MAC"},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "addresses": ["255.255.255.255/32"]}`, "broadcast address"},
		// the document cannot tell a subnet's broadcast address: 422
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "addresses": ["198.18.0.255/24"]}`, "422 broadcast address of 198.18.0.0/24"},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "addresses": ["224.0.0.1/4"]}`, "multicast"},
		{"POST", "/v1/cubes/c1/ports", `{"name": "p1", "addresses": ["0.0.0.0/0"]}`, "unspecified"},
		// what a port carries is its peer's MTU: 409
		{"POST", "/v1/cubes/c1/ports/p0/inject", `{"frame": "` + strings.Repeat("ab", 3000) + `"}`, "409 3000 bytes is longer than port p0 carries: at most 1514"},
	} {
		wantCode := 400
		if n, rest, ok := strings.Cut(c.want, " "); ok && len(n) == 3 && n[0] == '4' {
			fmt.Sscan(n, &wantCode)
			c.want = rest
		}
		code, body := do(t, c.method, url+c.path, adminTok, strings.NewReader(c.body))
		if code != wantCode || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %.60s: %d %s, want %d %q", c.method, c.path, c.body, code, body, wantCode, c.want)
		}
		if after := topologyOf(t, admin); after != before {
			t.Fatalf("%s %s changed the state", c.method, c.path)
		}
	}
	if code, body := do(t, "PUT", url+"/v1/topology?dry_run=true", adminTok, bytes.NewReader(doc)); code != 200 || !strings.Contains(body, `"dry_run": true`) {
		t.Fatalf("a real dry run: %d %s", code, body)
	}
	if after := topologyOf(t, admin); after != before {
		t.Fatal("the dry run changed the state")
	}
}

// A tenant with a cube prefix learns nothing about names outside it: a
// name another has and a free name are refused alike, for the name alone.
// Inside it only its own cubes can be: no one else's cube gets a name
// there, and prefixes do not overlap.
func TestCubePrefixesKeepNamesPrivate(t *testing.T) {
	url, _ := tenantServer(t)
	admin, t1, t2 := client.New("", url, adminTok), client.New("", url, t1Tok), client.New("", url, t2Tok)
	if err := admin.Do("PUT", "/v1/tenants/t2", map[string]any{"cube_prefix": "t2-"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := t1.Do("POST", "/v1/cubes", map[string]any{"name": "taken", "type": "monitor"}, nil); err != nil {
		t.Fatal(err)
	}
	before := topologyOf(t, admin)
	var answers []string
	for _, name := range []string{"taken", "free"} {
		err := t2.Do("POST", "/v1/cubes", map[string]any{"name": name, "type": "monitor"}, nil)
		refused(t, "t2 creates "+name, err, 403, `tenant t2 names its cubes t2-...: "`+name+`" does not start so`)
		if err != nil {
			answers = append(answers, strings.ReplaceAll(err.Error(), name, "NAME"))
		}
	}
	if len(answers) == 2 && answers[0] != answers[1] {
		t.Errorf("a taken name and a free one are refused differently:\n%s\n%s", answers[0], answers[1])
	}
	if after := topologyOf(t, admin); after != before {
		t.Fatalf("the refusals changed the state:\n%s", after)
	}
	if err := t2.Do("POST", "/v1/cubes", map[string]any{"name": "t2-mon", "type": "monitor"}, nil); err != nil {
		t.Fatalf("t2 names a cube with its prefix: %v", err)
	}
	// nobody else's cube in t2's part of the namespace
	refused(t, "t1 creates t2-x", t1.Do("POST", "/v1/cubes", map[string]any{"name": "t2-x", "type": "monitor"}, nil), 409, `the name "t2-x" is taken`)
	refused(t, "the administrator creates t2-adm", admin.Do("POST", "/v1/cubes", map[string]any{"name": "t2-adm", "type": "monitor"}, nil), 409, `names starting with "t2-" are tenant t2's`)
	if err := admin.Do("POST", "/v1/cubes", map[string]any{"name": "t2-given", "type": "monitor", "tenant": "t2"}, nil); err != nil {
		t.Fatalf("the administrator creates a cube of t2 in its prefix: %v", err)
	}
	refused(t, "the administrator gives t2's cube to t1", admin.Do("PATCH", "/v1/cubes/t2-given", map[string]any{"tenant": "t1"}, nil), 409, "tenant t2's")
	// prefixes are disjoint, and a prefix is refused where others' cubes
	// already have its names
	refused(t, "an overlapping prefix", admin.Do("PUT", "/v1/tenants/t3", map[string]any{"cube_prefix": "t2-x"}, nil), 409, `tenant t2's cube prefix "t2-"`)
	refused(t, "a prefix over t1's cube", admin.Do("PUT", "/v1/tenants/t3", map[string]any{"cube_prefix": "tak"}, nil), 409, "cube taken")
	refused(t, "a malformed prefix", admin.Do("PUT", "/v1/tenants/t3", map[string]any{"cube_prefix": "3x"}, nil), 400, "cube_prefix")
	var st struct {
		CubePrefix string `json:"cube_prefix"`
	}
	if err := t2.Do("GET", "/v1/tenants/t2", nil, &st); err != nil || st.CubePrefix != "t2-" {
		t.Fatalf("t2's record: %+v %v", st, err)
	}
}

// PUT of a table replaces its entries: those it does not list are gone,
// even when it lists as many (the engine finds a change's entries from
// those set: the table is cleared through the cube, not around it).
func TestPutTableReplacesItsEntries(t *testing.T) {
	url, eng := tenantServer(t)
	admin := client.New("", url, adminTok)
	if err := admin.Do("POST", "/v1/cubes", map[string]any{"name": "c1", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}, {"name": "p1"}, {"name": "p2"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do("POST", "/v1/cubes/c1/tables/rules", []map[string]string{{"in_port": "p0", "out_port": "p1"}, {"in_port": "p1", "out_port": "p0"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do("PUT", "/v1/cubes/c1/tables/rules", []map[string]string{{"in_port": "p2", "out_port": "p0"}, {"in_port": "p0", "out_port": "p2"}}, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := eng.Cube(tenant.Admin, "c1")
	rules := c.Tables["rules"]
	if len(rules) != 2 || rules["p1"] != nil || rules["p2"] == nil || !strings.Contains(string(rules["p0"]), `"p2"`) {
		t.Fatalf("rules after the PUT: %s, want p0 → p2 and p2 → p0 only", fmt.Sprint(rules))
	}
}
