package telemetry

import (
	"bufio"
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

// metered is an NF type with metrics of its own: portfwd's program, a
// controller that reports a gauge, a labelled counter (one of its labels
// named like a cube label) and a NaN.
type metered struct{}

func (metered) Sync(cube.Handle, *cube.Cube) error { return nil }

func (metered) Metrics(h cube.Handle, c *cube.Cube) []cube.Metric {
	return []cube.Metric{
		{Name: "sessions", Help: "Sessions.", Gauge: true, Value: 3},
		{Name: "hits_total", Help: "Hits, by rule.", Labels: map[string]string{"rule": "a", "tenant": "forged"}, Value: 1.5e6},
		{Name: "hits_total", Help: "Hits, by rule.", Labels: map[string]string{"rule": "b", "tenant": "forged"}, Value: 0},
		{Name: "ratio", Help: "Undefined ratio.", Gauge: true, Value: math.NaN()},
	}
}

func init() {
	cube.Register(&cube.Type{Name: "metered", Description: "portfwd with metrics of its own (telemetry tests)",
		Hooks: []datapath.Hook{datapath.XDP}, Object: portfwd.Type.Object, New: func() cube.Controller { return metered{} }})
}

// TestNFMetrics: an NF type's own metrics are edgenf_<type>_<name> with the
// cube, slice and tenant labels beside the NF's own (a clashing one
// renamed exported_*), in Prometheus and, as float fields of the
// measurement edgenf_<type>, in InfluxDB (NaN left out).
func TestNFMetrics(t *testing.T) {
	eng := nftest.Engine(t)
	nftest.MustUpdate(t, eng, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "m1", Type: "metered", Hook: datapath.XDP, Tenant: "red"})
	})
	var b bytes.Buffer
	if err := WriteText(bufio.NewWriter(&b), Gather(eng, tenant.Of("red"))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE edgenf_metered_sessions gauge\nedgenf_metered_sessions{cube=\"m1\",slice=\"\",tenant=\"red\"} 3\n",
		"# TYPE edgenf_metered_hits_total counter\n" +
			"edgenf_metered_hits_total{cube=\"m1\",exported_tenant=\"forged\",rule=\"a\",slice=\"\",tenant=\"red\"} 1.5e+06\n" +
			"edgenf_metered_hits_total{cube=\"m1\",exported_tenant=\"forged\",rule=\"b\",slice=\"\",tenant=\"red\"} 0\n",
		"edgenf_metered_ratio{cube=\"m1\",slice=\"\",tenant=\"red\"} NaN\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("exposition lacks\n%s\n%s", want, b.String())
		}
	}
	if _, err := scraper(eng, tenant.Of("red")).Gather(); err != nil {
		t.Fatalf("Prometheus' parser: %v", err)
	}
	batches, err := encodeLines(Gather(eng, tenant.Admin), time.UnixMilli(1), 100)
	if err != nil {
		t.Fatal(err)
	}
	var nf []line
	for _, l := range decodeLines(t, gunzip(t, batches[0].body)) {
		if l.measurement == "edgenf_metered" {
			nf = append(nf, l)
		}
	}
	if len(nf) != 3 || nf[0].kinds["sessions"] != lineprotocol.Float || nf[0].fields["sessions"] != 3 || len(nf[0].fields) != 1 || nf[1].tags["rule"] != "a" || nf[1].fields["hits_total"] != 1.5e6 || nf[1].tags["exported_tenant"] != "forged" || nf[1].tags["tenant"] != "red" {
		t.Fatalf("InfluxDB lines of edgenf_metered: %+v", nf)
	}
}
