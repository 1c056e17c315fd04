package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// adminMaxBody bounds the administrator's request bodies (a topology with a
// 100k-entry table fits); tenants have their request_body_bytes quota.
const adminMaxBody = 64 << 20

// queryParams lists the query parameters a route takes; every other one is
// refused (a misspelt ?dryrun= must not apply a change for real).
var queryParams = map[string][]string{
	"PUT /v1/topology": {"dry_run"},
}

// who is the actor a request acts for.
func who(r *http.Request) tenant.Actor { return identityOf(r).actor() }

// inflight counts each tenant's requests being served.
type inflight struct {
	mu sync.Mutex
	n  map[string]int64
}

type bodyLimitKey struct{}

// bodyLimit is the limit on a request's body and, for a tenant, its name.
type bodyLimit struct {
	max    int64
	tenant string
}

// admit checks a request against its route's query parameters and its
// sender's limits: body size and, for a tenant, concurrent requests. It
// returns the request to serve and the function to call when it is done,
// or false after replying with the refusal.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, id identity) (*http.Request, func(), bool) {
	if err := s.checkQuery(r); err != nil {
		fail(w, err)
		return nil, nil, false
	}
	lim := bodyLimit{max: adminMaxBody}
	done := func() {}
	if !id.admin {
		a := id.actor()
		lim = bodyLimit{max: s.eng.Limit(a, tenant.RequestBytes), tenant: id.tenant}
		max := s.eng.Limit(a, tenant.ConcurrentRequests)
		s.busy.mu.Lock()
		n := s.busy.n[id.tenant]
		if n >= max {
			s.busy.mu.Unlock()
			w.Header().Set("Retry-After", "1")
			fail(w, &httpError{429, "quota." + tenant.ConcurrentRequests,
				fmt.Sprintf("over quota %s: limit %d, in use %d", tenant.ConcurrentRequests, max, n)})
			return nil, nil, false
		}
		s.busy.n[id.tenant] = n + 1
		s.busy.mu.Unlock()
		done = func() {
			s.busy.mu.Lock()
			s.busy.n[id.tenant]--
			s.busy.mu.Unlock()
		}
	}
	if r.ContentLength > lim.max {
		done()
		fail(w, lim.tooLarge(r.ContentLength))
		return nil, nil, false
	}
	r = r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, lim))
	r.Body = http.MaxBytesReader(w, r.Body, lim.max)
	return r, done, true
}

// Busy reports a tenant's requests being served.
func (s *Server) Busy(name string) int64 {
	s.busy.mu.Lock()
	defer s.busy.mu.Unlock()
	return s.busy.n[name]
}

func (l bodyLimit) tooLarge(size int64) error {
	if l.tenant == "" {
		return &httpError{413, "", fmt.Sprintf("request body larger than %d bytes", l.max)}
	}
	msg := fmt.Sprintf("over quota %s: limit %d", tenant.RequestBytes, l.max)
	if size > 0 {
		msg += fmt.Sprintf(", this request has %d", size)
	}
	return &httpError{413, "quota." + tenant.RequestBytes, msg}
}

// readBody reads a request's body within its sender's limit.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	var tl *http.MaxBytesError
	switch {
	case errors.As(err, &tl):
		lim, _ := r.Context().Value(bodyLimitKey{}).(bodyLimit)
		lim.max = tl.Limit
		return nil, lim.tooLarge(0)
	case err != nil:
		return nil, &httpError{400, "", fmt.Sprintf("request body: %v", err)}
	}
	return b, nil
}

// checkQuery refuses query parameters the route does not take.
func (s *Server) checkQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return cube.Errorf("query", "malformed query string: %v", err)
	}
	_, pattern := s.mux.Handler(r)
	allowed := queryParams[pattern]
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !contains(allowed, k) {
			if len(allowed) == 0 {
				return cube.Errorf("query", "unknown query parameter %q: this resource takes none", k)
			}
			return cube.Errorf("query", "unknown query parameter %q (parameters: %s)", k, strings.Join(allowed, ", "))
		}
		if len(q[k]) > 1 {
			return cube.Errorf(k, "given %d times", len(q[k]))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// boolParam reads a boolean query parameter: absent is false, and only
// "true" and "false" are booleans.
func boolParam(r *http.Request, name string) (bool, error) {
	v, ok := r.URL.Query()[name]
	if !ok {
		return false, nil
	}
	switch v[0] {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, cube.Errorf(name, "%q is not a boolean: want true or false", v[0])
}
