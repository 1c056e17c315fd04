package api

import (
	"net/http"
	"slices"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/tenant"
)

// The tenants resource: the administrator declares tenants (the interfaces
// they may use, their quotas); a tenant reads its own record and usage.

func (s *Server) tenantRoutes() {
	m := s.mux
	m.HandleFunc("GET /v1/tenants", s.listTenants)
	m.HandleFunc("GET /v1/tenants/{tenant}", s.getTenant)
	m.HandleFunc("PUT /v1/tenants/{tenant}", s.admin(s.putTenant))
	m.HandleFunc("DELETE /v1/tenants/{tenant}", s.admin(s.deleteTenant))
}

// tokenTenants names the tenants the token file gives tokens to.
func (s *Server) tokenTenants() []string {
	if s.tokens == nil {
		return nil
	}
	var out []string
	for _, t := range s.tokens.list {
		if t.Tenant != "" {
			out = append(out, t.Tenant)
		}
	}
	return out
}

// withRequests fills in the requests a tenant has in flight.
func (s *Server) withRequests(st *engine.TenantStatus) *engine.TenantStatus {
	for i := range st.Quotas {
		if st.Quotas[i].Name == tenant.ConcurrentRequests {
			n := s.Busy(st.Name)
			st.Quotas[i].Used = &n
		}
	}
	return st
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	if !id.admin {
		st, err := s.eng.Tenant(id.actor(), id.tenant)
		if err != nil {
			fail(w, err)
			return
		}
		reply(w, 200, []*engine.TenantStatus{s.withRequests(st)})
		return
	}
	list, err := s.eng.Tenants(s.tokenTenants()...)
	if err != nil {
		fail(w, err)
		return
	}
	for _, st := range list {
		s.withRequests(st)
	}
	reply(w, 200, list)
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("tenant")
	st, err := s.eng.Tenant(who(r), name)
	if err == nil && st.Source == "none" && !slices.Contains(s.tokenTenants(), name) && usageOf(st, tenant.Cubes) == 0 {
		// no record, no token, no cube: no such tenant
		err = cube.NotFound("tenant", "no tenant named %q", name)
	}
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, s.withRequests(st))
}

func usageOf(st *engine.TenantStatus, quota string) int64 {
	for _, q := range st.Quotas {
		if q.Name == quota && q.Used != nil {
			return *q.Used
		}
	}
	return 0
}

func (s *Server) putTenant(w http.ResponseWriter, r *http.Request) {
	var t tenant.Tenant
	if err := decodeBody(r, &t); err != nil {
		fail(w, err)
		return
	}
	name := r.PathValue("tenant")
	if t.Name == "" {
		t.Name = name
	}
	if t.Name != name {
		fail(w, cube.Errorf("name", "the body names tenant %q but the URL %q", t.Name, name))
		return
	}
	created, err := s.eng.SetTenant(t)
	if err != nil {
		fail(w, err)
		return
	}
	st, err := s.eng.Tenant(tenant.Admin, name)
	if err != nil {
		fail(w, err)
		return
	}
	code := 200
	if created {
		code = 201
	}
	reply(w, code, s.withRequests(st))
}

func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.DeleteTenant(r.PathValue("tenant")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(204)
}
