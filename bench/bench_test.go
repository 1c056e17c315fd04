package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/bench"
	"github.com/edgenf/edgenf/bench/report"
	_ "github.com/edgenf/edgenf/bench/scenarios"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// TestQuick runs the core of quick mode on a few scenarios and checks that
// every one produced numbers and the report was written; it never checks
// their size (tests don't assert timings).
func TestQuick(t *testing.T) {
	testenv.E2E(t)
	c := bench.DefaultConfig(true)
	c.Reps, c.Warmup, c.Window, c.LatPackets, c.CostRepeat = 2, 50*time.Millisecond, 100*time.Millisecond, 200, 10000
	c.Only = []string{"baselines/xdp-redirect", "baselines/bridge", "baselines/ip-forward"}
	c.Log = t.Logf
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := bench.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) != 1 || len(res.Groups[0].Scenarios) != 3 {
		t.Fatalf("groups: %+v", res.Groups)
	}
	for _, s := range res.Groups[0].Scenarios {
		if s.Error != "" || len(s.Mpps) < 2 || s.Median <= 0 || s.LatP50 <= 0 || (!s.Baseline && s.Ratio <= 0) {
			t.Errorf("%s: no numbers: %+v", s.Name, s)
		}
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "quick.md")
	if err := report.Write(res, md, filepath.Join(dir, "quick.json")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "| xdp-redirect |") || !strings.Contains(string(b), "img/quick-baselines.png") {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "img", "quick-baselines.png")); err != nil {
		t.Fatal(err)
	}
	// Everything the run created is gone.
	out, _ := netlab.Leftovers("n")
	for _, o := range out {
		if strings.Contains(o, "-s0") || strings.Contains(o, "-s1") || strings.Contains(o, "-s2") {
			t.Logf("possible leftover (may belong to a parallel test): %s", o)
		}
	}
}

// TestQuickEdgenf runs edgenf scenarios (portfwd at XDP, a 2-cube chain at
// TC, 100 loaded cubes) briefly: numbers are produced, the generated frames
// all reach the sink (nothing in these paths drops at this rate).
func TestQuickEdgenf(t *testing.T) {
	testenv.E2E(t)
	c := bench.DefaultConfig(true)
	c.Reps, c.Warmup, c.Window, c.LatPackets, c.CostRepeat = 1, 50*time.Millisecond, 100*time.Millisecond, 100, 10000
	c.Only = []string{"portfwd/portfwd-xdp", "chain2-tc", "cubes-100"}
	c.Log = t.Logf
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := bench.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range res.Groups {
		for _, s := range g.Scenarios {
			n++
			if s.Error != "" || len(s.Mpps) < 1 || s.Median <= 0 || s.CostNs <= 0 && s.Name != "xdp-redirect" {
				t.Errorf("%s/%s: no numbers: %+v", g.Name, s.Name, s)
			}
		}
	}
	if n != 6 { // 3 scenarios + their baselines
		t.Errorf("ran %d scenarios, want 6", n)
	}
}

// A run its -timeout cuts short says so, with the groups it never
// measured, in the results and in the report's first line: the full
// report of 2026-11-24 lacked four upf groups and said "(took )".
func TestRunCutShortSaysWhatItMissed(t *testing.T) {
	c := bench.DefaultConfig(false)
	c.Only = []string{"portfwd", "nat"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := bench.Run(ctx, c)
	if err == nil || res == nil {
		t.Fatalf("a cancelled run: %v, %v", res, err)
	}
	if !strings.Contains(res.Stopped, "groups not measured: portfwd, nat") || res.Duration == "" {
		t.Errorf("stopped %q, duration %q", res.Stopped, res.Duration)
	}
	if md := report.Markdown(res, nil, "r.json"); !strings.Contains(md, "**cut short**: context canceled; groups not measured: portfwd, nat") {
		t.Errorf("the report does not say the run was cut short:\n%s", strings.SplitN(md, "\n\n", 3)[1])
	}
}
