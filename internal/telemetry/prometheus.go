package telemetry

import (
	"sort"

	"github.com/edgenf/edgenf/internal/engine"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Gatherer serves the series one scope sees to Prometheus
// (promhttp.HandlerFor). It builds the metric families straight from the
// gathered points: the label pairs of a port are shared by its seven
// series, and none goes through a registry's per-series checks (a scrape
// of 10,000 cubes has 150,000 series).
type Gatherer struct {
	eng   *engine.Engine
	scope Scope
}

// NewGatherer builds a gatherer over eng that exports what scope sees.
func NewGatherer(eng *engine.Engine, scope Scope) *Gatherer {
	return &Gatherer{eng: eng, scope: scope}
}

// Gather implements prometheus.Gatherer.
func (g *Gatherer) Gather() ([]*dto.MetricFamily, error) {
	return Families(Gather(g.eng, g.scope)), nil
}

// Families converts points to Prometheus metric families, sorted by name.
func Families(points []Point) []*dto.MetricFamily {
	byName := map[*Family]*dto.MetricFamily{}
	var out []*dto.MetricFamily
	for _, p := range points {
		pairs := make([]*dto.LabelPair, len(p.Labels))
		for i, l := range p.Labels {
			pairs[i] = &dto.LabelPair{Name: proto.String(l.Name), Value: proto.String(l.Value)}
		}
		for _, s := range p.Samples {
			mf := byName[s.Family]
			if mf == nil {
				typ := dto.MetricType_COUNTER
				if s.Family.Gauge {
					typ = dto.MetricType_GAUGE
				}
				mf = &dto.MetricFamily{Name: proto.String(s.Family.FullName()), Help: proto.String(s.Family.Help), Type: &typ}
				byName[s.Family] = mf
				out = append(out, mf)
			}
			v := float64(s.Value)
			m := &dto.Metric{Label: pairs}
			if s.Family.Gauge {
				m.Gauge = &dto.Gauge{Value: &v}
			} else {
				m.Counter = &dto.Counter{Value: &v}
			}
			mf.Metric = append(mf.Metric, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// Join gathers from several gatherers whose families do not overlap (the
// cubes' series and the daemon's own), without merging or re-checking them.
type Join []prometheus.Gatherer

// Gather implements prometheus.Gatherer.
func (j Join) Gather() ([]*dto.MetricFamily, error) {
	var out []*dto.MetricFamily
	for _, g := range j {
		mfs, err := g.Gather()
		if err != nil {
			return nil, err
		}
		out = append(out, mfs...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}
