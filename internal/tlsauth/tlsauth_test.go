package tlsauth_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/tlsauth"
	"github.com/edgenf/edgenf/internal/tlsauth/tlstest"
)

func parse(t *testing.T, p tlstest.Pair) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(p.Cert)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCertificateIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	for _, tc := range []struct {
		name string
		subj tlstest.Subject
		want tlsauth.Identity
		err  string
	}{
		{"uri-admin", tlstest.Subject{CN: "whoever", URIs: []string{"edgenf://admin"}}, tlsauth.Identity{Admin: true}, ""},
		{"uri-tenant", tlstest.Subject{URIs: []string{"spiffe://example.org/x", "edgenf://tenant/red"}}, tlsauth.Identity{Tenant: "red"}, ""},
		{"cn-admin", tlstest.Subject{CN: "edgenf:admin"}, tlsauth.Identity{Admin: true}, ""},
		{"cn-tenant", tlstest.Subject{CN: "edgenf:tenant:blue"}, tlsauth.Identity{Tenant: "blue"}, ""},
		// the URI wins over the CN
		{"uri-over-cn", tlstest.Subject{CN: "edgenf:admin", URIs: []string{"edgenf://tenant/red"}}, tlsauth.Identity{Tenant: "red"}, ""},
		// unprefixed names from a shared CA name nothing
		{"plain-cn", tlstest.Subject{CN: "admin"}, tlsauth.Identity{}, "names no edgenf identity"},
		{"two", tlstest.Subject{URIs: []string{"edgenf://tenant/red", "edgenf://tenant/blue"}}, tlsauth.Identity{}, "two identities"},
		{"bad-name", tlstest.Subject{URIs: []string{"edgenf://tenant/r%20d"}}, tlsauth.Identity{}, "invalid name"},
		{"bad-form", tlstest.Subject{URIs: []string{"edgenf://root"}}, tlsauth.Identity{}, "want admin or tenant"},
		{"nested", tlstest.Subject{URIs: []string{"edgenf://tenant/red/x"}}, tlsauth.Identity{}, "invalid name"},
		{"cn-bad", tlstest.Subject{CN: "edgenf:tenant:"}, tlsauth.Identity{}, "invalid name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tlsauth.FromCertificate(parse(t, ca.Client(tc.name, tc.subj)))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want error %q", id, err, tc.err)
				}
				return
			}
			if err != nil || id != tc.want {
				t.Fatalf("got %v, %v; want %v", id, err, tc.want)
			}
		})
	}
}

// handshake connects a client with files cf to a server with cfg and
// returns the server's view of the connection.
func handshake(t *testing.T, cfg *tls.Config, cf tlsauth.ClientFiles) (*tls.ConnectionState, error) {
	t.Helper()
	ccfg, err := tlsauth.ClientConfig(cf)
	if err != nil {
		t.Fatal(err)
	}
	return handshakeWith(t, cfg, ccfg)
}

func handshakeWith(t *testing.T, cfg, ccfg *tls.Config) (*tls.ConnectionState, error) {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan *tls.ConnectionState, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if tc.Handshake() != nil {
			got <- nil
			return
		}
		cs := tc.ConnectionState()
		got <- &cs
		tc.Write([]byte("x"))
	}()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.Addr().String(), ccfg)
	if err == nil {
		// TLS 1.3 reports a refused client certificate on the first read
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	return <-got, err
}

func TestServerConfigClientCertificates(t *testing.T) {
	ca, other := tlstest.NewCA(t, "ca"), tlstest.NewCA(t, "other")
	srv := ca.Server("srv")
	red := ca.Client("red", tlstest.Subject{URIs: []string{"edgenf://tenant/red"}})
	forged := other.Client("forged", tlstest.Subject{URIs: []string{"edgenf://admin"}})

	optional, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: srv.Cert, Key: srv.Key, ClientCA: ca.File}, false)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := handshake(t, optional, tlsauth.ClientFiles{CA: ca.File, Cert: red.Cert, Key: red.Key})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok, err := tlsauth.FromConnection(cs); !ok || err != nil || id.Tenant != "red" {
		t.Fatalf("identity %v %v %v", id, ok, err)
	}
	// no certificate: allowed (a token may follow), no identity
	cs, err = handshake(t, optional, tlsauth.ClientFiles{CA: ca.File})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tlsauth.FromConnection(cs); ok {
		t.Fatal("identity without a certificate")
	}
	// a certificate of another CA: a well-behaved client does not send
	// it (the server names its CAs), one that insists fails the handshake
	cs, err = handshake(t, optional, tlsauth.ClientFiles{CA: ca.File, Cert: forged.Cert, Key: forged.Key})
	if err != nil {
		t.Fatal(err)
	}
	if id, ok, _ := tlsauth.FromConnection(cs); ok {
		t.Fatalf("certificate of another CA gave identity %v", id)
	}
	pushy, _ := tlsauth.ClientConfig(tlsauth.ClientFiles{CA: ca.File})
	fc, err := tls.LoadX509KeyPair(forged.Cert, forged.Key)
	if err != nil {
		t.Fatal(err)
	}
	pushy.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &fc, nil }
	if _, err := handshakeWith(t, optional, pushy); err == nil {
		t.Fatal("certificate of another CA accepted")
	}
	required, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: srv.Cert, Key: srv.Key, ClientCA: ca.File}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, required, tlsauth.ClientFiles{CA: ca.File}); err == nil {
		t.Fatal("no client certificate accepted where one is required")
	}
	// the client checks the server: a client trusting another CA refuses
	if _, err := handshake(t, optional, tlsauth.ClientFiles{CA: other.File}); err == nil {
		t.Fatal("client accepted a server certificate of an untrusted CA")
	}
}

func TestServerCertificateIsReloaded(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	first, second := ca.Server("first"), ca.Server("second")
	dir := t.TempDir()
	cert, key := dir+"/cert.pem", dir+"/key.pem"
	copyFile(t, first.Cert, cert)
	copyFile(t, first.Key, key)
	cfg, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: cert, Key: key}, false)
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		x, _ := x509.ParseCertificate(c.Certificate[0])
		return x.Subject.CommonName
	}
	if got := served(); got != "first" {
		t.Fatalf("serves %s", got)
	}
	// a half-rotated pair (new certificate, old key) keeps the old one
	copyFile(t, second.Cert, cert)
	future := time.Now().Add(time.Minute)
	os.Chtimes(cert, future, future)
	time.Sleep(1100 * time.Millisecond)
	if got := served(); got != "first" {
		t.Fatalf("mismatched pair: serves %s", got)
	}
	copyFile(t, second.Key, key)
	os.Chtimes(key, future, future)
	time.Sleep(1100 * time.Millisecond)
	if got := served(); got != "second" {
		t.Fatalf("after rotation: serves %s", got)
	}
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	ca := tlstest.NewCA(t, "ca")
	srv := ca.Server("srv")
	if _, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: srv.Cert}, false); err == nil {
		t.Error("no key accepted")
	}
	if _, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: srv.Cert, Key: srv.Key}, true); err == nil {
		t.Error("required client certificates without a CA accepted")
	}
	if _, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: srv.Cert, Key: srv.Key, ClientCA: srv.Key}, false); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a key as CA: %v", err)
	}
	if _, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: srv.Key, Key: srv.Cert}, false); err == nil {
		t.Error("swapped certificate and key accepted")
	}
	if _, err := tlsauth.ClientConfig(tlsauth.ClientFiles{Cert: srv.Cert}); err == nil {
		t.Error("client certificate without key accepted")
	}
}
