package api

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tlsauth"
	"github.com/edgenf/edgenf/internal/tlsauth/tlstest"
)

// tlsServer serves the API over TLS with client certificates of ca and the
// usual tokens.
func tlsServer(t *testing.T, ca *tlstest.CA) string {
	eng := nftest.Engine(t)
	pair := ca.Server("api")
	cfg, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: pair.Cert, Key: pair.Key, ClientCA: ca.File}, false)
	if err != nil {
		t.Fatal(err)
	}
	// (not httptest's StartTLS: its own certificate would take precedence)
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(eng, NewTokens(Token{Token: adminTok}, Token{Token: t1Tok, Tenant: "t1"}, Token{Token: t2Tok, Tenant: "t2"}))}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "https://" + l.Addr().String()
}

func open(t *testing.T, url, token string, f tlsauth.ClientFiles) *client.Client {
	t.Helper()
	c, err := client.Open(client.Options{Server: url, Token: token, TLS: f})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClientCertificatesNameIdentities: over TLS a client certificate
// alone authenticates, as the administrator or as the tenant it names; a
// token sent with it must agree; without either the answer is 401.
func TestClientCertificatesNameIdentities(t *testing.T) {
	ca := tlstest.NewCA(t, "clients")
	url := tlsServer(t, ca)
	cert := func(name, uri string) tlsauth.ClientFiles {
		p := ca.Client(name, tlstest.Subject{URIs: []string{uri}})
		return tlsauth.ClientFiles{CA: ca.File, Cert: p.Cert, Key: p.Key}
	}
	admin := open(t, url, "", cert("admin", "edgenf://admin"))
	t1 := open(t, url, "", cert("t1", "edgenf://tenant/t1"))
	if err := admin.Do("POST", "/v1/cubes", map[string]string{"name": "a1", "type": "portfwd", "tenant": "t2"}, nil); err != nil {
		t.Fatal(err)
	}
	var made struct{ Tenant string }
	if err := t1.Do("POST", "/v1/cubes", map[string]string{"name": "b1", "type": "portfwd"}, &made); err != nil || made.Tenant != "t1" {
		t.Fatalf("tenant certificate creates %+v (%v)", made, err)
	}
	var list []struct{ Name string }
	if err := t1.Do("GET", "/v1/cubes", nil, &list); err != nil || len(list) != 1 || list[0].Name != "b1" {
		t.Fatalf("t1 sees %+v (%v)", list, err)
	}
	if c := code(t1.Do("GET", "/v1/topology", nil, nil)); c != 403 {
		t.Fatalf("tenant certificate reading the topology: HTTP %d", c)
	}
	// a certificate and a token of the same identity: fine; different: 401
	if err := open(t, url, t1Tok, cert("t1b", "edgenf://tenant/t1")).Do("GET", "/v1/cubes", nil, nil); err != nil {
		t.Fatal(err)
	}
	if c := code(open(t, url, adminTok, cert("t1c", "edgenf://tenant/t1")).Do("GET", "/v1/cubes", nil, nil)); c != 401 {
		t.Fatalf("tenant certificate with the admin token: HTTP %d, want 401", c)
	}
	// a certificate naming no identity is refused, even with a good token
	plain := ca.Client("plain", tlstest.Subject{CN: "admin"})
	if c := code(open(t, url, adminTok, tlsauth.ClientFiles{CA: ca.File, Cert: plain.Cert, Key: plain.Key}).Do("GET", "/v1/cubes", nil, nil)); c != 401 {
		t.Fatalf("certificate without an edgenf identity: HTTP %d, want 401", c)
	}
	// TLS without a certificate: the token decides
	if err := open(t, url, t2Tok, tlsauth.ClientFiles{CA: ca.File}).Do("GET", "/v1/cubes/a1", nil, nil); err != nil {
		t.Fatal(err)
	}
	if c := code(open(t, url, "", tlsauth.ClientFiles{CA: ca.File}).Do("GET", "/v1/cubes", nil, nil)); c != 401 {
		t.Fatalf("no credentials: HTTP %d, want 401", c)
	}
}

func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsNeedATokenAndAreScoped: /metrics over TCP is 401 without a
// token; a tenant's scrape names only its cubes.
func TestMetricsNeedATokenAndAreScoped(t *testing.T) {
	url := server(t)
	admin := client.New("", url, adminTok)
	for _, c := range []map[string]string{{"name": "red1", "type": "portfwd", "tenant": "t1"}, {"name": "blue1", "type": "portfwd", "tenant": "t2"}} {
		if err := admin.Do("POST", "/v1/cubes", c, nil); err != nil {
			t.Fatal(err)
		}
		if err := admin.Do("POST", "/v1/cubes/"+c["name"]+"/ports", map[string]string{"name": "p0"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if code, body := scrape(t, url, ""); code != 401 || strings.Contains(body, "red1") {
		t.Fatalf("no token: HTTP %d\n%s", code, body)
	}
	if code, _ := scrape(t, url, "not-a-token-0123456789"); code != 401 {
		t.Fatalf("bad token: HTTP %d", code)
	}
	code, body := scrape(t, url, t1Tok)
	if code != 200 || !strings.Contains(body, `cube="red1"`) || strings.Contains(body, "blue1") || strings.Contains(body, "copy_machine") {
		t.Fatalf("tenant t1: HTTP %d\n%s", code, body)
	}
	code, body = scrape(t, url, adminTok)
	if code != 200 || !strings.Contains(body, `cube="red1"`) || !strings.Contains(body, `cube="blue1"`) || !strings.Contains(body, "copy_machine") {
		t.Fatalf("admin: HTTP %d\n%s", code, body)
	}
}
