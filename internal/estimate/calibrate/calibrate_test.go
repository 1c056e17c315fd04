package calibrate

import (
	"context"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/estimate/p4path"
	_ "github.com/edgenf/edgenf/internal/nf/all"
	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/testenv"
)

// The short calibration measures its anchors and the framework on this
// machine and makes a profile that loads back, for this machine and hook,
// with a cost for every term of every model.
func TestShortCalibrationMakesAValidProfile(t *testing.T) {
	testenv.NeedRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := Run(ctx, Options{Hook: datapath.XDP, Short: true, Rounds: 3, Repeat: 2000})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/xdp.json"
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	back, notes, err := estimate.Resolve(path, datapath.XDP)
	if err != nil || len(notes) != 0 {
		t.Fatalf("the profile does not load back cleanly: %v %v", notes, err)
	}
	if back.Method != "short" || back.Host != estimate.ThisHost() || back.Hook != datapath.XDP || time.Since(back.Created) > time.Hour || back.Took == "" {
		t.Fatalf("profile header: %+v", back)
	}
	for _, m := range estimate.Models() {
		for _, term := range m.Terms {
			if _, ok := back.Costs[term.Name]; !ok {
				t.Errorf("no cost for %s (%s)", term.Name, m.Type)
			}
		}
	}
	for _, name := range []string{estimate.TermHop, estimate.TermEntry, p4path.TermSend} {
		if back.Costs[name] == 0 {
			t.Errorf("%s measured as 0", name)
		}
	}
	if len(back.Measurements) == 0 {
		t.Fatal("no measurements recorded")
	}
}

// The built-in profiles price every term of every model and the whole P4
// suite covers every P4 term (a new model or term needs them recalibrated:
// `edgenf estimate calibrate --hook H -O internal/estimate/profiles/H.json`).
func TestBuiltinProfilesCoverEveryModel(t *testing.T) {
	for _, h := range []datapath.Hook{datapath.XDP, datapath.TC} {
		p, err := estimate.Builtin(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range estimate.Models() {
			for _, term := range m.Terms {
				if _, ok := p.Costs[term.Name]; !ok {
					t.Errorf("built-in %s profile: no cost for %s (%s)", h, term.Name, m.Type)
				}
			}
		}
	}
}

// compileFrontEnd compiles to C only.
func compileFrontEnd(opt p4.Options) (*p4.Result, error) {
	opt.NoObject = true
	return p4.Compile(context.Background(), opt)
}

// Every micro-program compiles, and the path it is measured on is one path
// of it, using only terms the fit knows.
func TestSuitePaths(t *testing.T) {
	known := map[string]bool{}
	for _, term := range p4path.Terms {
		known[term.Name] = true
	}
	for _, c := range p4Cases() {
		opt := p4Options(c)
		res, err := compileFrontEnd(opt)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, c.source())
		}
		uses, verdict, err := pathUses(res, map[string]int{}, c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if verdict == "" {
			t.Fatalf("%s: no verdict", c.name)
		}
		for _, u := range uses {
			if !known[u.Term] {
				t.Fatalf("%s uses %s, not a P4 term", c.name, u.Term)
			}
		}
	}
}

// The NF cases that hold state across runs (Steady) or warm up by the
// other direction of a transparent cube, calibration and held-out, load
// and forward their frame run after run (the accuracy report would drop a
// case that does not). (Every case's frame is checked the same way by
// each calibration and accuracy run; loading them all here would take
// minutes.)
func TestStatefulNFCasesAreForwarded(t *testing.T) {
	testenv.NeedRoot(t)
	meter, err := measure.New(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	defer meter.Close()
	for _, m := range estimate.Models() {
		if m.Cases == nil {
			continue
		}
		for _, c := range append(m.Cases(false), m.Cases(true)...) {
			if c.Steady == nil && (c.WarmPort == "" || c.InPort != "") {
				continue
			}
			nc, err := LoadCase(meter, m, c)
			if err != nil {
				t.Errorf("%s: %s: %v", m.Type, c.Name, err)
				continue
			}
			it := nc.Item(c.Name)
			for i := 0; i < 2; i++ {
				if it.Before != nil {
					if err := it.Before(); err != nil {
						t.Errorf("%s: %s: before a run: %v", m.Type, c.Name, err)
					}
				}
				if v, err := meter.Verdict(nc.Entry, c.Frame); err != nil || v != datapath.XDPRedirect {
					t.Errorf("%s: %s: verdict %d, %v (want the frame forwarded)", m.Type, c.Name, v, err)
				}
			}
			nc.Close()
		}
	}
}

// At TC, an NF case repeats the path of its first repetition: the same
// verdict, a frame of the same length, run after run (Measure checks both
// at every calibration and says when a case does not). A case whose frame
// leaves with skb state changed (a VLAN tag pushed: the bridge from an
// access port to a trunk, the slicer's return from a VLAN slice; the
// protocol changed: NAT64's translations, the bridge's pop of a trunk's
// tag; header offsets and the encapsulation mark: the upf's decapsulation
// and encapsulation) is measured a run per call, each on a new skb. Before
// the upf's cases were, every repetition after the first was dropped
// (uplink: the decapsulation's header offsets; downlink: an skb is
// encapsulated once), and the bridge's pop was done once: the later
// repetitions forwarded the tagged frame. Checked here: every such case
// of at most 100 entries, and each model's first case, batched (loading
// every case takes minutes).
func TestNFCasesRepeatTheSamePathAtTC(t *testing.T) {
	testenv.NeedRoot(t)
	meter, err := measure.New(datapath.TC)
	if err != nil {
		t.Fatal(err)
	}
	defer meter.Close()
	n := 0
	for _, m := range estimate.Models() {
		if m.Cases == nil {
			continue
		}
		for i, c := range append(m.Cases(false), m.Cases(true)...) {
			if i > 0 && !c.ChangesSkb || rows(c.Cube) > 100 {
				continue
			}
			if c.ChangesSkb {
				n++
			}
			nc, err := LoadCase(meter, m, c)
			if err != nil {
				t.Fatalf("%s: %s: %v", m.Type, c.Name, err)
			}
			it := nc.Item(c.Name)
			if it.Single != c.ChangesSkb {
				t.Errorf("%s: %s: measured a run per call %v", m.Type, c.Name, it.Single)
			}
			res, err := meter.Measure(context.Background(), []measure.Item{it}, measure.Options{Rounds: 1, Repeat: 50})
			switch {
			case err != nil:
				t.Errorf("%s: %s: %v", m.Type, c.Name, err)
			case res[0].Diverged != "":
				t.Errorf("%s: %s: %s", m.Type, c.Name, res[0].Diverged)
			}
			nc.Close()
		}
	}
	if n < 15 {
		t.Fatalf("%d cases that change the skb; want the bridge's, the slicer's, NAT64's and the upf's", n)
	}
}

// rows counts a cube's table entries: a case of many (a upf's 20,000
// sessions) takes seconds to load and runs the path a smaller one does.
func rows(c *cube.Cube) int {
	n := 0
	for _, t := range c.Tables {
		n += len(t)
	}
	return n
}
