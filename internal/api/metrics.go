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
// own cubes (gathered per scrape: a tenant's view is never cached into
// another's).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	var g prometheus.Gatherer = telemetry.NewGatherer(s.eng, telemetry.Scope{All: id.admin, Tenant: id.tenant})
	if id.admin {
		// the daemon's own health (goroutines, memory, descriptors, the
		// InfluxDB export): host-wide, so not a tenant's to see
		g = telemetry.Join{g, s.daemonMetrics}
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

// newDaemonMetrics registers the daemon's own collectors.
func newDaemonMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// RegisterDaemonMetrics adds collectors of the daemon's own work (the
// InfluxDB exporter's) to the administrator's scrape.
func (s *Server) RegisterDaemonMetrics(c prometheus.Collector) error {
	return s.daemonMetrics.Register(c)
}
