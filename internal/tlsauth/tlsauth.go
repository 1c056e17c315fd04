// Package tlsauth is TLS for edgenfd's TCP listeners (the REST API and
// P4Runtime) and their clients: the server's certificate, reloaded when its
// files change (certificate rotation without a restart), optional
// client-certificate authentication, and the edgenf identity a client
// certificate names.
//
// A client certificate names its identity in one of two ways, the first
// found wins:
//
//   - a URI subject alternative name edgenf://admin (the administrator) or
//     edgenf://tenant/NAME (tenant NAME);
//   - else the subject common name edgenf:admin or edgenf:tenant:NAME.
//
// Both forms are prefixed so that a certificate the same CA issued for
// another purpose (CN=admin, say) names no edgenf identity at all. A
// certificate that names two different identities, or none, is refused.
package tlsauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
)

// Identity is who a client is: the administrator, or one tenant.
type Identity struct {
	Admin  bool
	Tenant string
}

func (id Identity) String() string {
	if id.Admin {
		return "admin"
	}
	return "tenant " + id.Tenant
}

// URIScheme is the scheme of the URI SANs that name identities.
const URIScheme = "edgenf"

// FromCertificate returns the identity a client certificate names.
func FromCertificate(c *x509.Certificate) (Identity, error) {
	var found []Identity
	for _, u := range c.URIs {
		if u.Scheme != URIScheme {
			continue
		}
		id, err := fromURI(u)
		if err != nil {
			return Identity{}, err
		}
		found = append(found, id)
	}
	if len(found) == 0 {
		if cn, ok := strings.CutPrefix(c.Subject.CommonName, URIScheme+":"); ok {
			id, err := parse(cn, ":", "subject CN "+c.Subject.CommonName)
			if err != nil {
				return Identity{}, err
			}
			found = append(found, id)
		}
	}
	if len(found) == 0 {
		return Identity{}, fmt.Errorf("client certificate %q names no edgenf identity: give it a URI SAN %s://admin or %s://tenant/NAME (or the CN %s:admin or %s:tenant:NAME)",
			c.Subject.String(), URIScheme, URIScheme, URIScheme, URIScheme)
	}
	for _, id := range found[1:] {
		if id != found[0] {
			return Identity{}, fmt.Errorf("client certificate %q names two identities (%s and %s)", c.Subject.String(), found[0], id)
		}
	}
	return found[0], nil
}

func fromURI(u *url.URL) (Identity, error) {
	if u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Identity{}, fmt.Errorf("URI SAN %s: want %s://admin or %s://tenant/NAME", u, URIScheme, URIScheme)
	}
	return parse(u.Host+u.Path, "/", "URI SAN "+u.String())
}

// parse reads "admin" or "tenant<sep>NAME".
func parse(s, sep, what string) (Identity, error) {
	if s == "admin" {
		return Identity{Admin: true}, nil
	}
	name, ok := strings.CutPrefix(s, "tenant"+sep)
	if !ok {
		return Identity{}, fmt.Errorf("%s: want admin or tenant%sNAME", what, sep)
	}
	if err := cube.CheckName("tenant", name); err != nil {
		return Identity{}, fmt.Errorf("%s: %v", what, err)
	}
	return Identity{Tenant: name}, nil
}

// FromConnection returns the identity of a connection's verified client
// certificate; ok is false when the client presented none.
func FromConnection(cs *tls.ConnectionState) (id Identity, ok bool, err error) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return Identity{}, false, nil
	}
	id, err = FromCertificate(cs.VerifiedChains[0][0])
	return id, err == nil, err
}

// ServerFiles are the PEM files of a TLS server.
type ServerFiles struct {
	Cert, Key string
	// ClientCA, when set, is the CA bundle client certificates are checked
	// against: clients may then authenticate with a certificate.
	ClientCA string
}

// ServerConfig builds the TLS configuration of a listener. With
// requireClientCert, a client without a valid certificate fails the
// handshake (used when no other way to authenticate is configured);
// otherwise a certificate is checked if the client sends one.
func ServerConfig(f ServerFiles, requireClientCert bool) (*tls.Config, error) {
	if f.Cert == "" || f.Key == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	kp := &keyPair{cert: f.Cert, key: f.Key}
	if err := kp.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}
	if f.ClientCA != "" {
		pool, err := loadPool(f.ClientCA)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if requireClientCert {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	} else if requireClientCert {
		return nil, errors.New("client certificates are required but no client CA is given")
	}
	return cfg, nil
}

// keyPair is a certificate and key read from files, read again when either
// file changes, so that a rotated certificate is served without a restart.
// A pair that does not load (rotation half done) leaves the previous one
// in service.
type keyPair struct {
	cert, key string

	mu      sync.Mutex
	current *tls.Certificate
	stamp   string // size and modification time of both files
	checked time.Time
}

func (k *keyPair) fileStamp() string {
	var b strings.Builder
	for _, p := range []string{k.cert, k.key} {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%d.%d;", st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

func (k *keyPair) load() error {
	stamp := k.fileStamp()
	c, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		return fmt.Errorf("TLS certificate %s / key %s: %w", k.cert, k.key, err)
	}
	k.current, k.stamp = &c, stamp
	return nil
}

// get serves the current pair, looking at the files at most once a second.
func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := time.Now(); now.Sub(k.checked) >= time.Second {
		k.checked = now
		if k.fileStamp() != k.stamp {
			prev := k.current
			if k.load() != nil {
				k.current = prev
			}
		}
	}
	return k.current, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// ClientFiles are the PEM files of a TLS client: the CA that signed the
// server's certificate (empty: the system's roots), and an optional client
// certificate and key.
type ClientFiles struct {
	CA, Cert, Key string
}

// Empty reports whether no file is given.
func (f ClientFiles) Empty() bool { return f == ClientFiles{} }

// ClientConfig builds a client's TLS configuration.
func ClientConfig(f ClientFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CA != "" {
		pool, err := loadPool(f.CA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (f.Cert == "") != (f.Key == "") {
		return nil, errors.New("a client certificate needs both --cert and --key")
	}
	if f.Cert != "" {
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s / key %s: %w", f.Cert, f.Key, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
