package api

import (
	"net/http"

	"github.com/edgenf/edgenf/internal/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics serves the Prometheus exposition, authenticated like every other
// resource: the administrator sees every series, a tenant only those of its
// own cubes (a registry per scrape: scrapes are rare, and a tenant's view
// must never be cached into another's).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	scope := telemetry.Scope{All: id.admin, Tenant: id.tenant}
	reg := prometheus.NewRegistry()
	reg.MustRegister(telemetry.NewCollector(s.eng, scope))
	if id.admin {
		// the daemon's own health (goroutines, memory, descriptors): the
		// soak test watches it; it is host-wide, so not a tenant's to see
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg.MustRegister(s.daemonMetrics...)
	}
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// Register adds collectors of the daemon's own (not about a cube: the
// -apply-file watcher's) to the administrator's /metrics.
func (s *Server) Register(cs ...prometheus.Collector) {
	s.daemonMetrics = append(s.daemonMetrics, cs...)
}
