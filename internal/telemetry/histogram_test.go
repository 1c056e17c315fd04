package telemetry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func histPoints() []Point {
	h := &cube.Histogram{Bounds: []float64{1e-6, 1e-5, 1e-4}, Counts: make([]uint64, 3)}
	for _, v := range []float64{5e-7, 2e-6, 3e-6, 5e-5, 1} {
		h.Observe(v)
	}
	f := &Family{Subsystem: "p4", Name: "int_hop_latency_seconds", Help: "Hop latency.", Float: true, Histogram: true}
	return []Point{{Labels: []Label{{LabelCube, "int1"}, {"switch_id", "7"}}, Samples: []Sample{{Family: f, Hist: h}}}}
}

// A histogram is exposed as Prometheus' parser (and promtool, if
// installed) reads histograms, and goes to InfluxDB as count, sum and
// cumulative buckets.
func TestHistogramExposition(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(bufio.NewWriter(&b), histPoints()); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	f := fams["edgenf_p4_int_hop_latency_seconds"]
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || len(f.Metric) != 1 {
		t.Fatalf("families %v\n%s", fams, text)
	}
	h := f.Metric[0].GetHistogram()
	var got []uint64
	for _, bk := range h.Bucket {
		got = append(got, bk.GetCumulativeCount())
	}
	if h.GetSampleCount() != 5 || h.GetSampleSum() != 1.0000555 || len(got) != 4 || got[0] != 1 || got[1] != 3 || got[2] != 4 || got[3] != 5 {
		t.Fatalf("histogram count %d sum %v buckets %v\n%s", h.GetSampleCount(), h.GetSampleSum(), got, text)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
	}
	batches, err := encodeLines(histPoints(), time.Unix(1, 0), 100)
	if err != nil || len(batches) != 1 {
		t.Fatal(err)
	}
	zr, _ := gzip.NewReader(bytes.NewReader(batches[0].body))
	line, _ := io.ReadAll(zr)
	want := "edgenf_p4,cube=int1,switch_id=7 int_hop_latency_seconds_count=5i,int_hop_latency_seconds_sum=1.0000555," +
		"int_hop_latency_seconds_le_1e-06=1i,int_hop_latency_seconds_le_1e-05=3i,int_hop_latency_seconds_le_0.0001=4i 1000\n"
	if string(line) != want {
		t.Fatalf("line protocol\n%s\nwant\n%s", line, want)
	}
}
