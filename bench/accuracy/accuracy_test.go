package accuracy

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/all" // the chains' NF types
	"github.com/edgenf/edgenf/internal/testenv"
)

// The error figures count held-out rows only: a row repeating a calibration
// configuration is shown and marked, a case that failed is shown and makes
// the report say so; the seed's functions are compared beside the seed's
// own errors.
func TestFiguresAndReport(t *testing.T) {
	r := &Results{Profile: "profile p", Host: "cpu, kernel k", Load: "1 → 1", Duration: "1m",
		Rows: []Row{
			{Name: "l3fwd.p4", Kind: "P4 program", Measured: 100, Estimated: 95, Error: -0.05, Seed: &Seed{Function: "L3_Fwd", Measured: 8387, Estimated: 8200}},
			{Name: "router: 1 route", Kind: "NF", Measured: 50, Estimated: 75, Error: 0.5, Calibration: true},
			{Name: "router: 10 routes", Kind: "NF", Measured: 50, Estimated: 60, Error: 0.2},
			{Name: "a → b", Kind: "chain", Failed: "the packet was dropped"},
		}}
	r.summarise()
	if r.HeldOut != 2 || r.NotMeasured != 1 || r.Max != 0.2 || r.MAE < 0.1249 || r.MAE > 0.1251 {
		t.Fatalf("figures: held out %d, not measured %d, MAE %v, max %v", r.HeldOut, r.NotMeasured, r.MAE, r.Max)
	}
	md := r.Markdown()
	for _, re := range []string{
		`(?m)^## Cost estimator accuracy$`,
		`(?m)^\| held-out programs and chains \| 2 \| ≥ 12 \| \*\*no\*\* \|$`,
		`(?m)^\| mean absolute error \| 12\.5% \| ≤ 10% \| \*\*no\*\* \|$`,
		`(?m)^\| maximum error \| 20\.0% \| ≤ 20% \| yes \|$`,
		`(?m)^\| held-out cases not measured \(see the table\) \| 1 \| 0 \| \*\*no\*\* \|$`,
		`(?m)^\| l3fwd\.p4 \| P4 program \| 100\.0 \(0\.0–0\.0\) \| 95\.0 \| -5\.0% \| +\|$`,
		`(?m)^\| router: 1 route \| NF \| 50\.0 .* \| \+50\.0% \| \*calibration\*; +\|$`,
		`(?m)^\| a → b \| chain \| – \| – \| – \| not measured: the packet was dropped \|$`,
		`(?m)^\| L3_Fwd \| 8387 / 8200 ns \| 187 ns \(2\.2%\) \| 100\.0 / 95\.0 ns \| 5\.0 ns \(5\.0%\) \|$`,
	} {
		if !regexp.MustCompile(re).MatchString(md) {
			t.Fatalf("report does not match %s:\n%s", re, md)
		}
	}
	// NFs after programs, chains last
	if strings.Index(md, "| router: 10 routes") > strings.Index(md, "| a → b") || strings.Index(md, "| l3fwd.p4") > strings.Index(md, "| router") {
		t.Fatalf("rows out of order:\n%s", md)
	}
}

// Every example P4 program is in the report (a new example needs its
// packet and path named in p4Examples), and the seed's two functions are.
func TestEveryExampleIsMeasured(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplesDir(), "*.p4"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	listed, seeds := map[string]bool{}, 0
	for _, ex := range p4Examples {
		listed[ex.file] = true
		if ex.seed != nil {
			seeds++
		}
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not in the accuracy report (p4Examples)", filepath.Base(f))
		}
	}
	if len(listed) != len(files) || seeds != 2 {
		t.Fatalf("p4Examples lists %d programs (%d with the seed's figures), examples/p4 has %d", len(listed), seeds, len(files))
	}
}

// Every chain case is deployed by the engine and forwards its frame as the
// meter runs it: received on the chain's entry interface, whose shared
// stub finds the chain by that interface (measure.Item.Ifindex). A case
// that does not would be "not measured" in the report; without the
// interface, every chain passed its frame to the stack.
func TestEveryChainIsMeasured(t *testing.T) {
	testenv.NeedRoot(t)
	meter, err := measure.New(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	defer meter.Close()
	lab, err := netlab.New(netlab.UniquePrefix())
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	ps, closeChains, err := chainCases(context.Background(), lab, meter)
	defer closeChains()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(chains()) {
		t.Fatalf("%d chain cases, want %d", len(ps), len(chains()))
	}
	for _, p := range ps {
		if p.close != nil {
			defer p.close()
		}
		if p.row.Failed != "" {
			t.Errorf("%s: not measured: %s", p.row.Name, p.row.Failed)
			continue
		}
		// the measured runs end as the check did
		res, err := meter.Measure(context.Background(), []measure.Item{p.item}, measure.Options{Rounds: 1, Repeat: 100})
		if err != nil {
			t.Fatalf("%s: %v", p.row.Name, err)
		}
		if res[0].Diverged != "" {
			t.Errorf("%s: %s", p.row.Name, res[0].Diverged)
		}
	}
}
