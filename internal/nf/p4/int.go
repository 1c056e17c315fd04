package p4

import (
	"slices"
	"strconv"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
)

// In-band network telemetry (seeds 000 and 001): a P4 program reports a
// hop's INT metadata to the daemon with a digest whose fields include
// switch_id and hop_latency_us (the time the packet spent in that switch,
// µs) and, optionally, path_latency_us (the delay the INT header has
// accumulated up to and including that hop). Each such digest is one
// observation of the switch's hop (and path) latency: the cube exports
// them as histograms per switch id, edgenf_p4_int_hop_latency_seconds and
// edgenf_p4_int_path_latency_seconds, to Prometheus and InfluxDB, besides
// listing the digest as any other. examples/p4/int_telemetry.p4 reports
// every hop so.

// intBounds are the histograms' bucket bounds, seconds: a hop in the
// kernel takes well under a microsecond, a congested queue milliseconds.
var intBounds = []float64{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1}

// intMaxSwitches bounds the switch ids a cube keeps histograms for (the
// ids come from packets).
const intMaxSwitches = 1024

type intHist struct{ hop, path *cube.Histogram }

// intStats are a cube's INT histograms by switch id.
type intStats struct {
	mu    sync.Mutex
	hops  map[uint64]*intHist
	extra uint64 // reports of switches past intMaxSwitches
}

func newHistogram() *cube.Histogram {
	return &cube.Histogram{Bounds: intBounds, Counts: make([]uint64, len(intBounds))}
}

// observe records a digest's fields if they are an INT hop report.
func (s *intStats) observe(vals map[string]string) {
	if s == nil {
		return
	}
	id, err1 := strconv.ParseUint(vals["switch_id"], 10, 64)
	hop, err2 := strconv.ParseUint(vals["hop_latency_us"], 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hops[id]
	if h == nil {
		if len(s.hops) >= intMaxSwitches {
			s.extra++
			return
		}
		if s.hops == nil {
			s.hops = map[uint64]*intHist{}
		}
		h = &intHist{hop: newHistogram()}
		s.hops[id] = h
	}
	h.hop.Observe(float64(hop) / 1e6)
	if path, err := strconv.ParseUint(vals["path_latency_us"], 10, 64); err == nil {
		if h.path == nil {
			h.path = newHistogram()
		}
		h.path.Observe(float64(path) / 1e6)
	}
}

// Metrics implements cube.MetricsReporter: the INT histograms.
func (ctl controller) Metrics(cube.Handle, *cube.Cube) []cube.Metric {
	s := ctl.ints
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cube.Metric
	ids := make([]uint64, 0, len(s.hops))
	for id := range s.hops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		labels := map[string]string{"switch_id": strconv.FormatUint(id, 10)}
		h := s.hops[id]
		out = append(out, cube.Metric{Name: "int_hop_latency_seconds", Labels: labels, Histogram: h.hop.Clone(),
			Help: "Time INT packets spent in a switch (hop latency), from the hops' INT reports (digests with switch_id and hop_latency_us)."})
		if h.path != nil {
			out = append(out, cube.Metric{Name: "int_path_latency_seconds", Labels: labels, Histogram: h.path.Clone(),
				Help: "Delay INT packets had accumulated up to and including a switch, from the hops' INT reports (path_latency_us)."})
		}
	}
	if s.extra > 0 {
		out = append(out, cube.Metric{Name: "int_reports_dropped_total", Value: float64(s.extra),
			Help: "INT reports not kept: more switch ids than a cube keeps histograms for (1024)."})
	}
	return out
}
