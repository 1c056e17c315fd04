package api

import (
	"bufio"
	"io"
	"net/http"
	"strings"

	"github.com/edgenf/edgenf/internal/telemetry"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// metrics serves the Prometheus exposition, authenticated like every other
// resource: the administrator sees every series, a tenant only those of its
// own cubes (gathered per scrape: a tenant's view is never cached into
// another's). The body is gzipped for clients that accept it (Prometheus
// does), at the fastest level: a scrape of 10,000 cubes is 15 MB of text.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	id := who(r)
	points := telemetry.Gather(s.eng, id)
	w.Header().Set("Content-Type", telemetry.TextContentType)
	var out io.Writer = w
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		defer gz.Close()
		out = gz
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	if err := telemetry.WriteText(bw, points); err != nil {
		return // the client went away
	}
	if !id.IsAdmin() {
		return
	}
	// the daemon's own health (goroutines, memory, descriptors, the
	// InfluxDB export): host-wide, so not a tenant's to see
	// (what could be gathered is served, as promhttp's ContinueOnError
	// does: a /proc file that cannot be read costs its series only)
	mfs, _ := s.daemonMetrics.Gather()
	for _, mf := range mfs {
		expfmt.MetricFamilyToText(bw, mf)
	}
	bw.Flush()
}

func acceptsGzip(r *http.Request) bool {
	for _, enc := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if name, q, _ := strings.Cut(strings.TrimSpace(enc), ";"); name == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

// newDaemonMetrics registers the daemon's own collectors.
func newDaemonMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// RegisterDaemonMetrics adds a collector of the daemon's own work (the
// InfluxDB exporter's) to the administrator's scrape.
func (s *Server) RegisterDaemonMetrics(c prometheus.Collector) error {
	return s.daemonMetrics.Register(c)
}
