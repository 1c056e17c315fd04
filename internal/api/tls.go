package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/edgenf/edgenf/internal/tlsauth"
)

// certIdentity is the identity of a request's verified client certificate
// (ok false: none was presented). A bearer token sent with a certificate
// must name the same identity: two credentials that disagree are refused
// rather than one picked.
func (s *Server) certIdentity(r *http.Request) (identity, bool, error) {
	cid, ok, err := tlsauth.FromConnection(r.TLS)
	if err != nil {
		return identity{}, false, err
	}
	if !ok {
		return identity{}, false, nil
	}
	id := identity{admin: cid.Admin, tenant: cid.Tenant}
	if tok, sent := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); sent {
		if tid, known := s.tokens.lookup(tok); !known || tid != id {
			return identity{}, false, errors.New("the bearer token and the client certificate name different identities")
		}
	}
	return id, true, nil
}

// Identity returns the identity a bearer token grants (for the P4Runtime
// server, which accepts the same tokens in its call metadata).
func (t *Tokens) Identity(token string) (tlsauth.Identity, bool) {
	id, ok := t.lookup(token)
	return tlsauth.Identity{Admin: id.admin, Tenant: id.tenant}, ok
}
