package api

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
)

// TestDashboardAssetsArePublicItsDataIsNot: /ui/ answers without a token
// (it holds no data); the resources it polls need one and are scoped to
// the tenant's cubes like the rest of the API.
func TestDashboardAssetsArePublicItsDataIsNot(t *testing.T) {
	url := server(t)
	resp, err := http.Get(url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "js/app.js") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("/ui/: HTTP %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	if resp, err := http.Post(url+"/ui/", "text/plain", nil); err != nil || resp.StatusCode != 401 {
		t.Fatalf("POST /ui/ is not the dashboard's: %v %v", err, resp.StatusCode)
	}
	for _, p := range []string{"/v1/whoami", "/v1/graph", "/v1/stats"} {
		if c := code(client.New("", url, "").Do("GET", p, nil, nil)); c != 401 {
			t.Errorf("%s without a token: HTTP %d, want 401", p, c)
		}
	}

	admin, t1 := client.New("", url, adminTok), client.New("", url, t1Tok)
	for _, c := range []map[string]any{
		{"name": "a1", "type": "portfwd", "tenant": "t1", "ports": []map[string]string{{"name": "p0"}, {"name": "p1"}}},
		{"name": "a2", "type": "portfwd", "tenant": "t1", "ports": []map[string]string{{"name": "p0", "peer": "a1:p1"}}},
		{"name": "m1", "type": "monitor", "tenant": "t1"},
		{"name": "b1", "type": "portfwd", "tenant": "t2", "ports": []map[string]string{{"name": "p0"}}},
	} {
		if err := admin.Do("POST", "/v1/cubes", c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Do("POST", "/v1/attachments", map[string]string{"cube": "m1", "point": "a1:p0"}, nil); err != nil {
		t.Fatal(err)
	}
	var who Identity
	if err := t1.Do("GET", "/v1/whoami", nil, &who); err != nil || who.Admin || who.Tenant != "t1" {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	var g Graph
	if err := t1.Do("GET", "/v1/graph", nil, &g); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range g.Cubes {
		names = append(names, c.Name)
		if c.Name == "m1" && !c.Transparent || c.Name == "a1" && (c.Transparent || len(c.Ports) != 2 || c.Ports[1].Peer != "a2:p0") {
			t.Errorf("graph cube %+v", c)
		}
	}
	if strings.Join(names, ",") != "a1,a2,m1" || len(g.Attachments) != 1 || g.Attachments[0].Point != "a1:p0" || g.Revision == 0 {
		t.Fatalf("t1's graph: %v %+v rev %d", names, g.Attachments, g.Revision)
	}
	var st Stats
	if err := t1.Do("GET", "/v1/stats", nil, &st); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, c := range st.Cubes {
		names = append(names, c.Cube)
	}
	if strings.Join(names, ",") != "a1,a2,m1" || st.Revision != g.Revision || st.Time.IsZero() {
		t.Fatalf("t1's stats: %v rev %d time %v", names, st.Revision, st.Time)
	}
	if p := st.Cubes[2].Ports; len(p) != 2 || p[0].Port != "ingress" || p[1].Port != "egress" {
		t.Errorf("m1's counters by direction: %+v", p)
	}
	if err := admin.Do("GET", "/v1/stats", nil, &st); err != nil || len(st.Cubes) != 4 {
		t.Fatalf("the administrator's stats: %d cubes, %v", len(st.Cubes), err)
	}
}

// TestCrossSiteRequestsRefused: a browser's request from another site's
// page that would change something is refused before anything else (a
// client certificate the browser presents must not let another site act);
// the same from the daemon's own origin, or from a program, is not.
func TestCrossSiteRequestsRefused(t *testing.T) {
	url := server(t)
	post := func(hdr ...string) int {
		req, _ := http.NewRequest("POST", url+"/v1/cubes", strings.NewReader(`{"name":"x1","type":"portfwd"}`))
		req.Header.Set("Authorization", "Bearer "+adminTok)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post("Sec-Fetch-Site", "cross-site"); c != 403 {
		t.Errorf("cross-site POST: HTTP %d, want 403", c)
	}
	if c := post("Origin", "https://evil.example"); c != 403 {
		t.Errorf("POST from another origin: HTTP %d, want 403", c)
	}
	if c := post("Sec-Fetch-Site", "same-origin"); c != 201 {
		t.Errorf("same-origin POST: HTTP %d, want 201", c)
	}
	var list []struct{ Name string }
	if err := client.New("", url, adminTok).Do("GET", "/v1/cubes", nil, &list); err != nil || len(list) != 1 {
		t.Fatalf("cubes after the refused requests: %+v %v", list, err)
	}
}
