package api

import (
	"net/http"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
)

// The endpoints resource: workloads (pods) plugged into tenants' cubes. The
// CNI plugin, the node's administrator, creates and deletes them; a tenant
// sees those on its own cubes.

func (s *Server) endpointRoutes() {
	m := s.mux
	m.HandleFunc("GET /v1/endpoints", s.listEndpoints)
	m.HandleFunc("GET /v1/endpoints/{endpoint}", s.getEndpoint)
	m.HandleFunc("PUT /v1/endpoints/{endpoint}", s.admin(s.putEndpoint))
	m.HandleFunc("DELETE /v1/endpoints/{endpoint}", s.admin(s.deleteEndpoint))
}

func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) {
	reply(w, 200, s.eng.Endpoints(who(r)))
}

func (s *Server) getEndpoint(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("endpoint")
	ep, ok := s.eng.Endpoint(who(r), name)
	if !ok {
		fail(w, cube.NotFound("endpoint", "no endpoint named %q", name))
		return
	}
	reply(w, 200, ep)
}

// putEndpoint plugs a workload in: 201 when new, 200 when the same
// endpoint exists already (a retried CNI ADD).
func (s *Server) putEndpoint(w http.ResponseWriter, r *http.Request) {
	var ep endpoint.Endpoint
	if err := decodeBody(r, &ep); err != nil {
		fail(w, err)
		return
	}
	name := r.PathValue("endpoint")
	if ep.Name == "" {
		ep.Name = name
	}
	if ep.Name != name {
		fail(w, cube.Errorf("name", "the body names endpoint %q but the URL %q", ep.Name, name))
		return
	}
	created, err := s.eng.AddEndpoint(&ep)
	if err != nil {
		fail(w, err)
		return
	}
	code := 200
	if created {
		code = 201
	}
	out, _ := s.eng.Endpoint(who(r), name)
	reply(w, code, out)
}

func (s *Server) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.DeleteEndpoint(r.PathValue("endpoint")); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(204)
}
