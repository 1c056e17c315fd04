package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/web"
)

// The web dashboard: its assets at /ui/ (public: they hold no data; the
// page asks for a token and sends it, like any client, in an Authorization
// header to the resources below), and the resources it polls.

func (s *Server) uiRoutes() {
	m := s.mux
	m.HandleFunc("GET /v1/whoami", s.whoami)
	m.HandleFunc("GET /v1/graph", s.graph)
	m.HandleFunc("GET /v1/stats", s.allStats)
}

// isUI tells requests for the dashboard's assets, served without
// authentication.
func isUI(r *http.Request) bool {
	return (r.Method == "GET" || r.Method == "HEAD") && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

var uiAssets = web.Handler("/ui/")

// crossOrigin refuses what a browser sends on behalf of another site's page
// (a form posted to the API): a browser holding a client certificate
// presents it to any page's requests, so a certificate alone must not let
// another site change anything. The dashboard's own requests, the CLI and
// other programs are not cross-origin browser requests.
var crossOrigin = http.NewCrossOriginProtection()

// Identity is who a request authenticated as.
type Identity struct {
	Admin  bool   `json:"admin"`
	Tenant string `json:"tenant,omitempty"`
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	reply(w, 200, Identity{Admin: id.admin, Tenant: id.tenant})
}

// Graph is the topology as the caller may see it, without table entries
// or settings: what the dashboard draws, refetched when Revision changes.
type Graph struct {
	Revision    uint64       `json:"revision"`
	Cubes       []GraphCube  `json:"cubes"`
	Attachments []Attachment `json:"attachments"`
}

// GraphCube is a cube's place in the graph.
type GraphCube struct {
	Name        string        `json:"name"`
	Type        string        `json:"type"`
	Hook        datapath.Hook `json:"hook"`
	Tenant      string        `json:"tenant,omitempty"`
	Transparent bool          `json:"transparent"`
	Ports       []cube.Port   `json:"ports"`
	Down        string        `json:"down,omitempty"`
}

func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	id := who(r)
	rev := s.eng.Revision()
	t := s.eng.Topology()
	g := Graph{Revision: rev, Cubes: []GraphCube{}, Attachments: []Attachment{}}
	for _, n := range t.CubeNames() {
		c := t.Lookup(n)
		if !id.Owns(c) {
			continue
		}
		gc := GraphCube{Name: c.Name, Type: c.Type, Hook: c.Hook, Tenant: c.Tenant, Ports: []cube.Port{}, Down: c.Down}
		if typ, err := cube.Lookup(c.Type); err == nil {
			gc.Transparent = typ.Transparent
		}
		for _, p := range c.Ports {
			p.Config = nil
			gc.Ports = append(gc.Ports, p)
		}
		g.Cubes = append(g.Cubes, gc)
	}
	g.Attachments = attachmentsOf(t, id)
	reply(w, 200, g)
}

// Stats are every visible cube's counters at one time.
type Stats struct {
	Time     time.Time             `json:"time"`
	Revision uint64                `json:"revision"`
	Cubes    []engine.CubeCounters `json:"cubes"`
}

// allStats reads the counters of every cube the caller may see, the way a
// scrape does (a chunk of cubes per hold of the engine's lock).
func (s *Server) allStats(w http.ResponseWriter, r *http.Request) {
	st := Stats{Revision: s.eng.Revision(), Cubes: s.eng.Counters(who(r).Owns)}
	st.Time = time.Now()
	reply(w, 200, st)
}
