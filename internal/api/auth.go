package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Tokens are the bearer tokens accepted on the TCP listener. The unix socket
// (root-only) needs none and is the administrator. The token file also
// declares tenants (their interfaces and quotas) and the default quota.
type Tokens struct {
	list         []Token
	Tenants      []tenant.Tenant
	DefaultQuota tenant.Quota
}

// Token grants administrator rights, or access to one tenant's cubes.
type Token struct {
	Token  string `json:"token"`
	Tenant string `json:"tenant,omitempty"` // empty: administrator
}

// LoadTokens reads a JSON file: {"tokens": [{"token": "...", "tenant": "t1"}, ...]}.
// The file must not be readable by group or others.
func LoadTokens(path string) (*Tokens, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token file %s is readable by others (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Tokens       []Token         `json:"tokens"`
		Tenants      []tenant.Tenant `json:"tenants,omitempty"`
		DefaultQuota tenant.Quota    `json:"default_quota,omitempty"`
	}
	if err := cube.DecodeInto("", b, &f); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	for i, t := range f.Tokens {
		if len(t.Token) < 16 {
			return nil, fmt.Errorf("token file %s: tokens[%d] is shorter than 16 characters", path, i)
		}
	}
	for i := range f.Tenants {
		if err := f.Tenants[i].Validate(); err != nil {
			return nil, fmt.Errorf("token file %s: tenants[%d]: %w", path, i, err)
		}
	}
	if err := f.DefaultQuota.Validate(); err != nil {
		return nil, fmt.Errorf("token file %s: default_quota: %w", path, err)
	}
	return &Tokens{list: f.Tokens, Tenants: f.Tenants, DefaultQuota: f.DefaultQuota}, nil
}

// NewTokens builds a token set in memory.
func NewTokens(list ...Token) *Tokens { return &Tokens{list: list} }

type identityKey struct{}

// identity is who a request comes from.
type identity struct {
	admin  bool
	tenant string
}

// actor is who the engine acts for.
func (id identity) actor() tenant.Actor {
	if id.admin {
		return tenant.Admin
	}
	return tenant.Of(id.tenant)
}

func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(identityKey{}).(identity)
	return id
}

// unixConnKey marks requests that came over the unix socket.
type unixConnKey struct{}

func (s *Server) identify(r *http.Request) (identity, error) {
	if v, _ := r.Context().Value(unixConnKey{}).(bool); v {
		return identity{admin: true}, nil
	}
	if id, ok, err := s.certIdentity(r); ok || err != nil { // tls.go
		return id, err
	}
	if s.tokens == nil {
		return identity{}, errors.New("no tokens configured for TCP access")
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return identity{}, errors.New("missing bearer token (Authorization: Bearer <token>)")
	}
	if id, ok := s.tokens.lookup(tok); ok {
		return id, nil
	}
	return identity{}, errors.New("invalid token")
}

// lookup finds a token's identity, comparing in constant time.
func (t *Tokens) lookup(tok string) (identity, bool) {
	if t == nil {
		return identity{}, false
	}
	for _, e := range t.list {
		if subtle.ConstantTimeCompare([]byte(e.Token), []byte(tok)) == 1 {
			return identity{admin: e.Tenant == "", tenant: e.Tenant}, true
		}
	}
	return identity{}, false
}

// admin restricts a handler to administrators.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !identityOf(r).admin {
			fail(w, &httpError{403, "", "this resource needs an administrator token"})
			return
		}
		h(w, r)
	}
}

// Unix is the handler for the root-only unix socket: its requests are the
// administrator's. (A TCP client cannot set this context value.)
func (s *Server) Unix() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), unixConnKey{}, true)))
	})
}
