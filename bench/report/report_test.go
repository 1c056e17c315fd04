package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/bench"
)

// result is a run of the portfwd group: the baseline and portfwd-xdp
// with the given per-repetition ratios per CPU-s.
func result(ratios []float64) *bench.Results {
	base := bench.ScenarioResult{Name: "xdp-redirect", Baseline: true, Mpps: []float64{5, 5, 5, 5, 5, 5},
		MppsCPU: []float64{6.0, 6.2, 5.4, 6.6, 6.0, 6.1}}
	pf := bench.ScenarioResult{Name: "portfwd-xdp", Mpps: []float64{4, 4, 4, 4, 4}, Ratios: ratios, RatiosCPU: ratios,
		MppsCPU: []float64{5.5, 5.6, 5.7, 5.8, 5.9}}
	for _, s := range []*bench.ScenarioResult{&base, &pf} {
		bench.Summarise(s)
	}
	return &bench.Results{Groups: []bench.GroupResult{{Name: "portfwd", Baseline: "xdp-redirect", Scenarios: []bench.ScenarioResult{base, pf}}}}
}

func headlineRow(t *testing.T, md string) string {
	t.Helper()
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| one portfwd cube at XDP vs raw XDP redirect |") {
			return l
		}
	}
	t.Fatalf("no portfwd headline in\n%s", md)
	return ""
}

// A headline ratio's verdict is flagged when the middle half of its
// repetitions holds the target (0.95 here), whichever side the median
// fell on; the row and the group's table show the range, the IQR and the
// spread of the scenario's and the baseline's repetitions.
func TestHeadlineFlagsASpreadOverTheTarget(t *testing.T) {
	for _, c := range []struct {
		ratios []float64
		want   string
	}{
		{[]float64{0.90, 0.93, 0.94, 0.97, 1.00}, "| no (*within spread*) |"},  // median 0.94, IQR 0.93–0.97
		{[]float64{0.92, 0.94, 0.96, 0.98, 1.02}, "| yes (*within spread*) |"}, // median 0.96, IQR 0.94–0.98
		{[]float64{0.80, 0.81, 0.82, 0.83, 0.96}, "| no |"},                    // IQR 0.81–0.83
		{[]float64{0.97, 0.98, 0.99, 1.00, 1.01}, "| yes |"},                   // IQR 0.98–1.00
	} {
		md := Markdown(result(c.ratios), nil, "x.json")
		row := headlineRow(t, md)
		if !strings.HasSuffix(row, c.want) {
			t.Errorf("ratios %v: %s, want it to end %q", c.ratios, row, c.want)
		}
		if !strings.Contains(row, "; IQR ") || !strings.Contains(row, "baseline's ±") {
			t.Errorf("ratios %v: no spread in %s", c.ratios, row)
		}
	}
	md := Markdown(result([]float64{0.90, 0.93, 0.94, 0.97, 1.00}), nil, "x.json")
	// the baseline's Mpps per CPU-s 5.4–6.6 around 6.05: ±10%
	if !strings.Contains(md, "| xdp-redirect |") || !strings.Contains(md, "6.050 (5.400–6.600, ±10%)") {
		t.Errorf("the group table has no baseline spread:\n%s", md)
	}
	if !strings.Contains(md, "**0.940** (0.90–1.00; IQR 0.93–0.97)") {
		t.Errorf("the group table has no ratio IQR:\n%s", md)
	}
	if !strings.Contains(md, "*within spread*: this run does not tell it apart") {
		t.Error("the report does not say how to read the spread")
	}
}

func TestQuartiles(t *testing.T) {
	for _, c := range []struct {
		v      []float64
		q1, q3 float64
	}{
		{nil, 0, 0},
		{[]float64{3}, 3, 3},
		{[]float64{4, 1, 3, 2, 5}, 2, 4},
		{[]float64{1, 2, 3, 4}, 1.75, 3.25},
	} {
		if q1, q3 := bench.Quartiles(c.v); q1 != c.q1 || q3 != c.q3 {
			t.Errorf("%v: %v, %v; want %v, %v", c.v, q1, q3, c.q1, c.q3)
		}
	}
}

// Re-writing a report removes the plots it showed, and no other report's
// (performance.md's groups against performance-recent.md's).
func TestWriteKeepsOtherReportsPlots(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := os.MkdirAll(img, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"performance-gone.png", "performance-recent-portfwd.png"} {
		if err := os.WriteFile(filepath.Join(img, f), []byte("png"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := filepath.Join(dir, "performance.md")
	if err := os.WriteFile(md, []byte("![gone](img/performance-gone.png)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(result([]float64{0.9, 0.95, 1}), md, filepath.Join(dir, "performance.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(img, "performance-gone.png")); !os.IsNotExist(err) {
		t.Errorf("the old report's plot of a group gone is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(img, "performance-recent-portfwd.png")); err != nil {
		t.Errorf("another report's plot went: %v", err)
	}
	if _, err := os.Stat(filepath.Join(img, "performance-portfwd.png")); err != nil {
		t.Errorf("no plot of the group: %v", err)
	}
}
