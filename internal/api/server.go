// Package api serves edgenf's REST API. Every resource is generic over the NF
// types' models (internal/cube): no handler is written per NF type.
package api

// server.go is long because it is the route table with the handlers of the
// generic resources (cubes, ports, tables, views, actions, topology), which
// read best beside their routes; admission, limits, authentication, tenants
// and OpenAPI have their own files.

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/prometheus/client_golang/prometheus"
)

// Server is the HTTP handler of the API.
type Server struct {
	eng    *engine.Engine
	tokens *Tokens
	mux    *http.ServeMux
	busy   inflight // admit.go
	// estimate, when set, gives the cost estimate of a topology's chains,
	// returned with dry runs of PUT /v1/topology.
	estimate func(*cube.Topology) ([]estimate.ChainCost, error)
	// daemonMetrics: the daemon's own collectors (metrics.go)
	daemonMetrics *prometheus.Registry
}

// SetEstimate makes dry runs of PUT /v1/topology return the estimate of
// the topology's chains.
func (s *Server) SetEstimate(f func(*cube.Topology) ([]estimate.ChainCost, error)) { s.estimate = f }

// New builds the API over an engine. tokens may be nil (no TCP access).
func New(eng *engine.Engine, tokens *Tokens) *Server {
	s := &Server{eng: eng, tokens: tokens, mux: http.NewServeMux(), busy: inflight{n: map[string]int64{}}, daemonMetrics: newDaemonMetrics()}
	s.routes()
	removeStaleCaptures(s) // capture.go
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, map[string]string{"status": "ok"}) })
	m.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, OpenAPI()) })
	m.HandleFunc("GET /v1/types", s.listTypes)
	m.HandleFunc("GET /v1/types/{type}", s.getType)
	m.HandleFunc("GET /v1/topology", s.admin(s.getTopology))
	m.HandleFunc("PUT /v1/topology", s.admin(s.putTopology))
	m.HandleFunc("GET /v1/cubes", s.listCubes)
	m.HandleFunc("POST /v1/cubes", s.createCube)
	m.HandleFunc("GET /v1/attachments", s.listAttachments)
	m.HandleFunc("POST /v1/attachments", s.attach)
	m.HandleFunc("DELETE /v1/attachments/{cube}", s.detach)
	m.HandleFunc("POST /v1/captures", s.capture) // capture.go
	s.tenantRoutes()                             // tenants.go
	s.endpointRoutes()                           // endpoints.go
	m.HandleFunc("GET /v1/interfaces/{iface}/stats", s.admin(s.ifaceStats))
	m.HandleFunc("GET /metrics", s.metrics) // metrics.go
	s.uiRoutes()                            // ui.go
	// Everything under a cube, reachable generically and per type (the
	// typed paths are what the OpenAPI document describes with schemas).
	for _, prefix := range []string{"/v1/cubes/{cube}", "/v1/nf/{type}/{cube}"} {
		m.HandleFunc("GET "+prefix, s.cubeOp(s.getCube))
		m.HandleFunc("PATCH "+prefix, s.cubeOp(s.patchCube))
		m.HandleFunc("DELETE "+prefix, s.cubeOp(s.deleteCube))
		m.HandleFunc("GET "+prefix+"/config", s.cubeOp(s.getConfig))
		m.HandleFunc("PUT "+prefix+"/config", s.cubeOp(s.putConfig))
		m.HandleFunc("GET "+prefix+"/ports", s.cubeOp(s.listPorts))
		m.HandleFunc("POST "+prefix+"/ports", s.cubeOp(s.addPort))
		m.HandleFunc("GET "+prefix+"/ports/{port}", s.cubeOp(s.getPort))
		m.HandleFunc("PATCH "+prefix+"/ports/{port}", s.cubeOp(s.patchPort))
		m.HandleFunc("DELETE "+prefix+"/ports/{port}", s.cubeOp(s.deletePort))
		m.HandleFunc("POST "+prefix+"/ports/{port}/inject", s.cubeOp(s.inject))
		m.HandleFunc("GET "+prefix+"/tables/{table}", s.cubeOp(s.listEntries))
		m.HandleFunc("POST "+prefix+"/tables/{table}", s.cubeOp(s.addEntries))
		m.HandleFunc("PUT "+prefix+"/tables/{table}", s.cubeOp(s.replaceEntries))
		m.HandleFunc("GET "+prefix+"/tables/{table}/{key}", s.cubeOp(s.getEntry))
		m.HandleFunc("PUT "+prefix+"/tables/{table}/{key}", s.cubeOp(s.putEntry))
		m.HandleFunc("DELETE "+prefix+"/tables/{table}/{key}", s.cubeOp(s.deleteEntry))
		m.HandleFunc("GET "+prefix+"/views/{view}", s.cubeOp(s.getView))
		m.HandleFunc("POST "+prefix+"/actions/{action}", s.cubeOp(s.doAction))
		m.HandleFunc("GET "+prefix+"/stats", s.cubeOp(s.getStats))
		m.HandleFunc("DELETE "+prefix+"/stats", s.cubeOp(s.resetStats))
		m.HandleFunc("POST "+prefix+"/swap", s.cubeOp(s.swap))
	}
}

// ServeHTTP authenticates, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isUI(r) { // ui.go: the dashboard's assets, which hold no data
		uiAssets.ServeHTTP(w, r)
		return
	}
	if err := crossOrigin.Check(r); err != nil { // ui.go
		fail(w, &httpError{403, "", err.Error()})
		return
	}
	id, err := s.identify(r)
	if err != nil {
		fail(w, &httpError{401, "", err.Error()})
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	r, done, ok := s.admit(w, r, id) // admit.go
	if !ok {
		return
	}
	defer done()
	s.mux.ServeHTTP(w, r)
}

// --- replies and errors ---

type httpError struct {
	Code    int    `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (e *httpError) Error() string { return e.Message }

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// fail maps model errors to HTTP: invalid 400, forbidden 403, not found
// 404, conflict 409, unprocessable 422, anything else (kernel refused) 500.
func fail(w http.ResponseWriter, err error) {
	he := &httpError{Code: 500, Message: err.Error()}
	var fe *cube.FieldError
	var h *httpError
	switch {
	case errors.As(err, &h):
		he = h
	case errors.As(err, &fe):
		he.Field, he.Message = fe.Field, fe.Msg
		switch {
		case errors.Is(err, cube.ErrNotFound):
			he.Code = 404
		case errors.Is(err, cube.ErrConflict):
			he.Code = 409
		case errors.Is(err, cube.ErrForbidden):
			he.Code = 403
		case errors.Is(err, cube.ErrUnprocessable):
			he.Code = 422
		case errors.Is(err, cube.ErrTooMany):
			he.Code = 429
		default:
			he.Code = 400
		}
	}
	reply(w, he.Code, map[string]*httpError{"error": he})
}

// decodeBody reads a JSON body strictly into v (unknown fields rejected).
func decodeBody(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return &httpError{400, "", "empty request body: a JSON object is required"}
	}
	return cube.DecodeInto("", b, v)
}

func readRaw(r *http.Request) (json.RawMessage, error) {
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		var v any
		return nil, cube.Within("body", json.Unmarshal(b, &v))
	}
	return b, nil
}

// --- types ---

// TypeInfo describes an NF type's model for clients (the CLI builds entries
// and tables from it).
type TypeInfo struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	Transparent bool         `json:"transparent"`
	Hooks       []string     `json:"hooks"`
	Config      *Schema      `json:"config,omitempty"`
	PortConfig  *Schema      `json:"port_config,omitempty"`
	Tables      []NamedModel `json:"tables,omitempty"`
	Views       []NamedModel `json:"views,omitempty"`
	Actions     []NamedModel `json:"actions,omitempty"`
}

// NamedModel is a table, view or action with its schema.
type NamedModel struct {
	Name   string  `json:"name"`
	Doc    string  `json:"doc,omitempty"`
	Schema *Schema `json:"schema,omitempty"`
	Max    int     `json:"max,omitempty"`
	// Object: the view is one object of the schema, not a list of them.
	Object bool `json:"object,omitempty"`
}

func typeInfo(t *cube.Type) TypeInfo {
	ti := TypeInfo{Name: t.Name, Description: t.Description, Transparent: t.Transparent}
	for _, h := range t.Hooks {
		ti.Hooks = append(ti.Hooks, string(h))
	}
	if t.Config != nil {
		ti.Config = SchemaOf(t.Config)
	}
	if t.PortConfig != nil {
		ti.PortConfig = SchemaOf(t.PortConfig)
	}
	for _, tb := range t.Tables {
		ti.Tables = append(ti.Tables, NamedModel{Name: tb.Name, Doc: tb.Doc, Schema: SchemaOf(tb.Item), Max: tb.Max})
	}
	for _, v := range t.Views {
		var sc *Schema
		if v.Item != nil {
			sc = SchemaOf(v.Item)
		}
		ti.Views = append(ti.Views, NamedModel{Name: v.Name, Doc: v.Doc, Schema: sc, Object: v.Object})
	}
	for _, a := range t.Actions {
		var sc *Schema
		if a.Args != nil {
			sc = SchemaOf(a.Args)
		}
		ti.Actions = append(ti.Actions, NamedModel{Name: a.Name, Doc: a.Doc, Schema: sc})
	}
	return ti
}

func (s *Server) listTypes(w http.ResponseWriter, r *http.Request) {
	out := []TypeInfo{}
	for _, t := range cube.Types() {
		out = append(out, typeInfo(t))
	}
	reply(w, 200, out)
}

func (s *Server) getType(w http.ResponseWriter, r *http.Request) {
	t, err := cube.Lookup(r.PathValue("type"))
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, typeInfo(t))
}

// --- topology ---

func (s *Server) getTopology(w http.ResponseWriter, r *http.Request) {
	reply(w, 200, s.eng.Topology().Document())
}

// putTopology makes a document the whole desired state (declarative apply).
func (s *Server) putTopology(w http.ResponseWriter, r *http.Request) {
	var doc cube.Document
	if err := decodeBody(r, &doc); err != nil {
		fail(w, err)
		return
	}
	dry, err := boolParam(r, "dry_run")
	if err != nil {
		fail(w, err)
		return
	}
	t, err := doc.Topology()
	if err != nil {
		fail(w, err)
		return
	}
	changes, err := s.eng.Replace(r.Context(), t, dry)
	if err != nil {
		fail(w, err)
		return
	}
	if changes == nil {
		changes = []engine.Change{}
	}
	out := map[string]any{"dry_run": dry, "changes": changes}
	if dry && s.estimate != nil {
		// what each chain would cost per packet (estimate.go: a failure
		// to estimate does not fail the dry run)
		if chains, err := s.estimate(t); err != nil {
			out["estimate_error"] = err.Error()
		} else {
			out["estimate"] = chains
		}
	}
	reply(w, 200, out)
}

// --- cubes ---

// cubeFunc handles a request about one existing cube the caller may see.
type cubeFunc func(w http.ResponseWriter, r *http.Request, c *cube.Cube)

func (s *Server) cubeOp(fn cubeFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("cube")
		c, ok := s.eng.CubeHeader(who(r), name) // tables: s.eng.Entries, Entry, Cube
		if !ok {
			fail(w, cube.NotFound("cube", "no cube named %q", name))
			return
		}
		if t := r.PathValue("type"); t != "" && t != c.Type {
			fail(w, cube.NotFound("cube", "cube %s is of type %s, not %s", name, c.Type, t))
			return
		}
		fn(w, r, c)
	}
}

func (s *Server) listCubes(w http.ResponseWriter, r *http.Request) {
	t := s.eng.Topology()
	id := who(r)
	out := []*cube.Cube{}
	for _, n := range t.CubeNames() {
		if id.Owns(t.Lookup(n)) {
			out = append(out, t.Lookup(n))
		}
	}
	reply(w, 200, out)
}

// cubeRequest is a cube as created through the API: ports may omit their
// index (lowest free is taken).
type cubeRequest struct {
	Name   string          `json:"name" format:"name"`
	Type   string          `json:"type"`
	Hook   string          `json:"hook,omitempty" enum:"xdp|tc"`
	Tenant string          `json:"tenant,omitempty" format:"name"`
	Ports  []portRequest   `json:"ports,omitempty" maxItems:"64"`
	Config json.RawMessage `json:"config,omitempty"`
}

type portRequest struct {
	Name      string          `json:"name" format:"name"`
	Index     *int            `json:"index,omitempty" minimum:"0" maximum:"63"`
	Peer      string          `json:"peer,omitempty" format:"peer"`
	MAC       string          `json:"mac,omitempty" format:"mac-unicast"`
	Addresses []string        `json:"addresses,omitempty" format:"port-address"`
	Config    json.RawMessage `json:"config,omitempty"`
}

// port is the port requested; an index, if given, is 0 or more (without
// one, the lowest free index is taken).
func (p portRequest) port(field string) (cube.Port, error) {
	idx := -1
	if p.Index != nil {
		if idx = *p.Index; idx < 0 {
			return cube.Port{}, cube.Errorf(field+"index", "port index %d is negative: give 0..%d, or no index for the lowest free one", idx, datapath.MaxPorts-1)
		}
	}
	return cube.Port{Name: p.Name, Index: idx, Peer: p.Peer, MAC: p.MAC, Addresses: p.Addresses, Config: p.Config}, nil
}

// cube is the cube requested.
func (req cubeRequest) cube() (*cube.Cube, error) {
	c := &cube.Cube{Name: req.Name, Type: req.Type, Hook: datapath.Hook(req.Hook), Tenant: req.Tenant, Config: req.Config}
	for i, p := range req.Ports {
		port, err := p.port(fmt.Sprintf("ports[%d].", i))
		if err != nil {
			return nil, err
		}
		c.Ports = append(c.Ports, port)
	}
	return c, nil
}

func (s *Server) createCube(w http.ResponseWriter, r *http.Request) {
	var req cubeRequest
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Name == "" {
		fail(w, cube.Errorf("name", "required"))
		return
	}
	if req.Type == "" {
		fail(w, cube.Errorf("type", "required"))
		return
	}
	id := identityOf(r)
	if !id.admin {
		if req.Tenant != "" && req.Tenant != id.tenant {
			fail(w, &httpError{403, "tenant", "a tenant token can only create cubes of its own tenant"})
			return
		}
		req.Tenant = id.tenant
	}
	model, err := req.cube()
	if err != nil {
		fail(w, err)
		return
	}
	err = s.eng.UpdateAs(r.Context(), id.actor(), func(t *cube.Topology, sc tenant.Scope) error {
		if err := sc.NewCube("name", model.Name); err != nil {
			return err
		}
		for _, p := range model.Ports {
			if p.Peer != "" {
				if err := sc.Ref(t, "ports["+p.Name+"].peer", p.Peer); err != nil {
					return err
				}
			}
		}
		return t.AddCube(model.Clone())
	})
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 201, s.cube(r, req.Name))
}

func (s *Server) getCube(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	reply(w, 200, s.cube(r, c.Name))
}

func (s *Server) patchCube(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	var req struct {
		Tenant *string          `json:"tenant,omitempty"`
		Config *json.RawMessage `json:"config,omitempty"`
	}
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Tenant != nil && !identityOf(r).admin {
		fail(w, &httpError{403, "tenant", "only an administrator can move a cube between tenants"})
		return
	}
	s.update(w, r, c, func(t *cube.Topology, _ tenant.Scope) error {
		tc, err := t.Edit(c.Name)
		if err != nil {
			return err
		}
		if req.Tenant != nil {
			tc.Tenant = *req.Tenant
		}
		if req.Config != nil {
			tc.Config = *req.Config
		}
		return nil
	}, func() any { return s.cube(r, c.Name) })
}

// typeMismatch: on the paths that are not typed (/v1/cubes/...), the
// document cannot say which settings and port addresses fit a cube, whose
// NF type is its state: settings, and addresses any port may have, that do
// not fit clash with that state (409). The typed paths (/v1/nf/{type}/...)
// describe them: there they are malformed (400). addrs are the port
// addresses of the request.
func typeMismatch(r *http.Request, c *cube.Cube, err error, addrs ...string) error {
	var fe *cube.FieldError
	if r.PathValue("type") != "" || !errors.As(err, &fe) || !errors.Is(err, cube.ErrInvalid) {
		return err
	}
	switch {
	case strings.Contains(fe.Field, "config"):
	case strings.Contains(fe.Field, "addresses"):
		for _, a := range addrs {
			if !anyPortAddress.MatchString(a) {
				return err
			}
		}
	default:
		return err
	}
	return cube.Conflict(fe.Field, "%s (what NF type %s takes: see /v1/nf/%s/{cube} in the API's document)", fe.Msg, c.Type, c.Type)
}

// anyPortAddress is the format of the addresses any port may have.
var anyPortAddress = regexp.MustCompile(schema.Formats["port-address"].Pattern)

func (s *Server) deleteCube(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	if err := s.eng.UpdateAs(r.Context(), who(r), func(t *cube.Topology, _ tenant.Scope) error { return t.DeleteCube(c.Name) }); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(204)
}

// cube is the current state of a cube (after a change).
func (s *Server) cube(r *http.Request, name string) *cube.Cube {
	c, _ := s.eng.Cube(who(r), name)
	return c
}

// update applies fn, a change of cube c (with these port addresses), for
// the request's sender and replies with result() or the error.
func (s *Server) update(w http.ResponseWriter, r *http.Request, c *cube.Cube, fn func(t *cube.Topology, sc tenant.Scope) error, result func() any, addrs ...string) {
	if err := s.eng.UpdateAs(r.Context(), who(r), fn); err != nil {
		fail(w, typeMismatch(r, c, err, addrs...))
		return
	}
	reply(w, 200, result())
}

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	if len(c.Config) == 0 {
		reply(w, 200, map[string]any{})
		return
	}
	reply(w, 200, c.Config)
}

func (s *Server) putConfig(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	raw, err := readRaw(r)
	if err != nil {
		fail(w, err)
		return
	}
	s.update(w, r, c, func(t *cube.Topology, _ tenant.Scope) error { return t.SetConfig(c.Name, raw) },
		func() any { return s.cube(r, c.Name).Config })
}

// --- ports ---

func (s *Server) listPorts(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	ports := c.Ports
	if ports == nil {
		ports = []cube.Port{}
	}
	reply(w, 200, ports)
}

func (s *Server) addPort(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	var req portRequest
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	p, err := req.port("")
	if err != nil {
		fail(w, err)
		return
	}
	err = s.eng.UpdateAs(r.Context(), who(r), func(t *cube.Topology, sc tenant.Scope) error {
		if p.Peer != "" {
			if err := sc.Ref(t, "peer", p.Peer); err != nil {
				return err
			}
		}
		return t.AddPort(c.Name, p)
	})
	if err != nil {
		fail(w, typeMismatch(r, c, err, p.Addresses...))
		return
	}
	reply(w, 201, s.cube(r, c.Name).Port(req.Name))
}

func (s *Server) port(w http.ResponseWriter, r *http.Request, c *cube.Cube) *cube.Port {
	p := c.Port(r.PathValue("port"))
	if p == nil {
		fail(w, cube.NotFound("port", "cube %s has no port %q", c.Name, r.PathValue("port")))
	}
	return p
}

func (s *Server) getPort(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	if p := s.port(w, r, c); p != nil {
		reply(w, 200, p)
	}
}

func (s *Server) patchPort(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	p := s.port(w, r, c)
	if p == nil {
		return
	}
	var req struct {
		Peer      *string          `json:"peer,omitempty"`
		MAC       *string          `json:"mac,omitempty"`
		Addresses *[]string        `json:"addresses,omitempty"`
		Config    *json.RawMessage `json:"config,omitempty"`
	}
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	ref := c.Name + ":" + p.Name
	var addrs []string
	if req.Addresses != nil {
		addrs = *req.Addresses
	}
	s.update(w, r, c, func(t *cube.Topology, sc tenant.Scope) error {
		if req.Peer != nil {
			if *req.Peer != "" {
				if err := sc.Ref(t, "peer", *req.Peer); err != nil {
					return err
				}
			}
			if err := t.Unpeer(ref); err != nil {
				return err
			}
			if *req.Peer != "" {
				if err := t.SetPeer(ref, *req.Peer); err != nil {
					return err
				}
			}
		}
		tc, err := t.Edit(c.Name)
		if err != nil {
			return err
		}
		tp := tc.Port(p.Name)
		if tp == nil {
			return cube.NotFound("port", "cube %s has no port %q", c.Name, p.Name)
		}
		if req.MAC != nil {
			tp.MAC = *req.MAC
		}
		if req.Addresses != nil {
			tp.Addresses = *req.Addresses
		}
		if req.Config != nil {
			tp.Config = *req.Config
		}
		return nil
	}, func() any { return s.cube(r, c.Name).Port(p.Name) }, addrs...)
}

func (s *Server) deletePort(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	if p := s.port(w, r, c); p != nil {
		if err := s.eng.UpdateAs(r.Context(), who(r), func(t *cube.Topology, _ tenant.Scope) error { return t.DeletePort(c.Name, p.Name) }); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(204)
	}
}

func (s *Server) inject(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	var req struct {
		Frame     string `json:"frame"` // hex
		Direction string `json:"direction,omitempty"`
	}
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	frame, err := hex.DecodeString(strings.ReplaceAll(req.Frame, " ", ""))
	if err != nil {
		fail(w, cube.Errorf("frame", "not hex: %v", err))
		return
	}
	out := false
	switch req.Direction {
	case "", "in":
	case "out":
		out = true
	default:
		fail(w, cube.Errorf("direction", "want in or out, got %q", req.Direction))
		return
	}
	if err := s.eng.Inject(who(r), c.Name, r.PathValue("port"), frame, out); err != nil {
		fail(w, err)
		return
	}
	reply(w, 202, map[string]int{"injected_bytes": len(frame)})
}

// --- tables ---

func (s *Server) table(w http.ResponseWriter, r *http.Request, c *cube.Cube) *cube.Table {
	tb, err := s.eng.Table(who(r), c.Name, r.PathValue("table"))
	if err != nil {
		fail(w, err)
		return nil
	}
	return tb
}

func (s *Server) listEntries(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	if tb := s.table(w, r, c); tb != nil {
		reply(w, 200, s.eng.Entries(who(r), c.Name, tb.Name))
	}
}

// rawList reads one entry or a JSON array of entries.
func rawList(r *http.Request) ([]json.RawMessage, error) {
	raw, err := readRaw(r)
	if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, cube.Errorf("body", "%v", err)
		}
		return list, nil
	}
	return []json.RawMessage{raw}, nil
}

// tableAndEntries resolves the table of the URL and reads the body's entries.
func (s *Server) tableAndEntries(w http.ResponseWriter, r *http.Request, c *cube.Cube) (*cube.Table, []json.RawMessage, bool) {
	tb := s.table(w, r, c)
	if tb == nil {
		return nil, nil, false
	}
	list, err := rawList(r)
	if err != nil {
		fail(w, err)
		return nil, nil, false
	}
	return tb, list, true
}

// addEntries adds one entry or many (all or none); an existing key is a
// conflict: use PUT on the key to replace it.
func (s *Server) addEntries(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	tb, list, ok := s.tableAndEntries(w, r, c)
	if !ok {
		return
	}
	if len(list) == 0 {
		fail(w, cube.Errorf("body", "no entries: give one entry or a list of them"))
		return
	}
	at := func(i int) string {
		if len(list) == 1 {
			return ""
		}
		return fmt.Sprintf("[%d]", i)
	}
	var out []json.RawMessage
	err := s.eng.ChangeEntries(who(r), c.Name, tb.Name, func(tx *engine.EntryTx) error {
		out = out[:0]
		for i, raw := range list {
			key, err := tx.Insert(raw)
			var dup *engine.EntryExistsError
			if errors.As(err, &dup) {
				return cube.Conflict(at(i)+"key", "%v; replace it with PUT (edgenf table set)", dup)
			}
			if err != nil {
				return withIndex(at(i), err)
			}
			row, _ := tx.Get(key)
			out = append(out, row)
		}
		return nil
	})
	if err != nil {
		fail(w, err)
		return
	}
	if len(out) == 1 {
		reply(w, 201, out[0])
		return
	}
	reply(w, 201, out)
}

func withIndex(at string, err error) error {
	if at == "" {
		return err
	}
	return cube.Within(at, err)
}

// replaceEntries makes the table exactly the given list, atomically.
func (s *Server) replaceEntries(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	tb, list, ok := s.tableAndEntries(w, r, c)
	if !ok {
		return
	}
	err := s.eng.UpdateAs(r.Context(), who(r), func(t *cube.Topology, _ tenant.Scope) error {
		tc, err := t.Edit(c.Name)
		if err != nil {
			return err
		}
		tc.ClearTable(tb.Name)
		first := map[string]int{}
		for i, raw := range list {
			key, err := t.PutEntry(c.Name, tb.Name, raw)
			if err != nil {
				return cube.Within(fmt.Sprintf("[%d]", i), err)
			}
			if j, dup := first[key]; dup {
				return cube.Conflict(fmt.Sprintf("[%d].key", i), "entry %q is also at [%d]: a table lists each key once", key, j)
			}
			first[key] = i
		}
		return nil
	})
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, map[string]int{"entries": len(s.cube(r, c.Name).Tables[tb.Name])})
}

func (s *Server) getEntry(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	tb := s.table(w, r, c)
	if tb == nil {
		return
	}
	raw, ok := s.eng.Entry(who(r), c.Name, tb.Name, r.PathValue("key"))
	if !ok {
		fail(w, cube.NotFound("key", "table %s of %s has no entry %q", tb.Name, c.Name, r.PathValue("key")))
		return
	}
	reply(w, 200, raw)
}

func (s *Server) putEntry(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	tb := s.table(w, r, c)
	if tb == nil {
		return
	}
	raw, err := readRaw(r)
	if err != nil {
		fail(w, err)
		return
	}
	key := r.PathValue("key")
	var row json.RawMessage
	err = s.eng.ChangeEntries(who(r), c.Name, tb.Name, func(tx *engine.EntryTx) error {
		k, err := tx.Put(raw)
		if err == nil && k != key {
			// RFC 9110 9.3.4: a representation that does not fit its target
			return cube.Conflict("key", "entry has key %q but the URL names %q", k, key)
		}
		row, _ = tx.Get(key)
		return err
	})
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, row)
}

func (s *Server) deleteEntry(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	tb := s.table(w, r, c)
	if tb == nil {
		return
	}
	if err := s.eng.ChangeEntries(who(r), c.Name, tb.Name, func(tx *engine.EntryTx) error { return tx.Delete(r.PathValue("key")) }); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(204)
}

// --- views, actions, stats, swap ---

func (s *Server) getView(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	v, err := s.eng.View(who(r), c.Name, r.PathValue("view"))
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, v)
}

func (s *Server) doAction(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	raw, err := readBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	v, err := s.eng.Action(who(r), c.Name, r.PathValue("action"), raw)
	if wt, ok := v.(cube.Waiter); ok && err == nil {
		done := longPoll(w, r)        // limits.go
		v, err = wt.Wait(r.Context()) // a long poll, outside the engine's lock
		done()
	}
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, v)
}

func (s *Server) getStats(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	st, err := s.eng.Stats(who(r), c.Name)
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, st)
}

func (s *Server) resetStats(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	if err := s.eng.ResetStats(who(r), c.Name); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(204)
}

func (s *Server) swap(w http.ResponseWriter, r *http.Request, c *cube.Cube) {
	var req struct {
		Object string `json:"object,omitempty"` // base64 ELF; empty: the NF type's own
	}
	raw, err := readBody(r)
	if err != nil {
		fail(w, err)
		return
	}
	if err := cube.DecodeInto("", raw, &req); err != nil {
		fail(w, err)
		return
	}
	var obj []byte
	if req.Object != "" {
		var err error
		if obj, err = base64.StdEncoding.DecodeString(req.Object); err != nil {
			fail(w, cube.Errorf("object", "not base64: %v", err))
			return
		}
	}
	if err := s.eng.Swap(who(r), c.Name, obj); err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, map[string]string{"swapped": c.Name})
}

// --- attachments ---

// Attachment is one transparent cube on a point.
type Attachment struct {
	Cube     string `json:"cube" format:"name"`
	Point    string `json:"point" format:"peer"`
	Position string `json:"position,omitempty" pattern:"^(first|last|[0-9]+|(before|after):[A-Za-z][A-Za-z0-9_-]{0,31})$" doc:"where in the point's stack: first, last (default), before:CUBE or after:CUBE; listed: the index, outermost 0"`
}

func (s *Server) listAttachments(w http.ResponseWriter, r *http.Request) {
	reply(w, 200, attachmentsOf(s.eng.Topology(), who(r)))
}

// attachmentsOf lists the attachments of the cubes id owns, by point.
func attachmentsOf(t *cube.Topology, id tenant.Actor) []Attachment {
	out := []Attachment{}
	points := make([]string, 0, len(t.Attachments))
	for p := range t.Attachments {
		points = append(points, p)
	}
	sort.Strings(points)
	for _, p := range points {
		for i, c := range t.Attachments[p] {
			if id.Owns(t.Lookup(c)) {
				out = append(out, Attachment{Cube: c, Point: p, Position: fmt.Sprint(i)})
			}
		}
	}
	return out
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	var req Attachment
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Cube == "" || req.Point == "" {
		fail(w, cube.Errorf("cube", "cube and point are required"))
		return
	}
	err := s.eng.UpdateAs(r.Context(), who(r), func(t *cube.Topology, sc tenant.Scope) error {
		if !sc.Actor.Owns(t.Lookup(req.Cube)) {
			return cube.NotFound("cube", "no cube named %q", req.Cube)
		}
		if err := sc.Ref(t, "point", req.Point); err != nil {
			return err
		}
		return t.Attach(req.Cube, req.Point, req.Position)
	})
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 201, req)
}

func (s *Server) detach(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("cube")
	err := s.eng.UpdateAs(r.Context(), who(r), func(t *cube.Topology, sc tenant.Scope) error {
		if !sc.Actor.Owns(t.Lookup(name)) {
			return cube.NotFound("cube", "no cube named %q", name)
		}
		if t.AttachedTo(name) == "" {
			return cube.NotFound("cube", "cube %s is not attached", name)
		}
		t.Detach(name)
		return nil
	})
	if err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(204)
}

func (s *Server) ifaceStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.eng.IfaceStats(r.PathValue("iface"))
	if err != nil {
		fail(w, err)
		return
	}
	reply(w, 200, st)
}
