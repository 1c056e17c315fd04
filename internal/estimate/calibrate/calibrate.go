// Package calibrate measures the cost model's terms on this machine at one
// hook: generated P4 micro-programs, the framework's hops, and every NF
// type's calibration cases, all run with BPF_PROG_TEST_RUN through the
// measure package (interleaved rounds, frames restored every run); then it
// fits the terms and returns a profile. `edgenf estimate calibrate` runs
// it.
package calibrate

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/measure"
)

// Options of a calibration.
type Options struct {
	Hook datapath.Hook // Run's; Prepare takes its meter's
	// Short measures the framework, a few anchor P4 programs and one case
	// per NF model, and scales the built-in profile's other costs by what
	// the anchors show (seconds instead of a minute or two).
	Short  bool
	Rounds int // interleaved rounds (default 15, short 5)
	Repeat int // runs per measurement (default 20,000, short 5,000)
	Clang  string
	Log    func(format string, args ...any)
}

// Run calibrates and returns the profile (not saved).
func Run(ctx context.Context, opt Options) (*estimate.Profile, error) {
	if opt.Hook != datapath.XDP && opt.Hook != datapath.TC {
		return nil, fmt.Errorf("hook %q: want xdp or tc", opt.Hook)
	}
	m, err := measure.New(opt.Hook)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	s, err := Prepare(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	items := s.Items()
	s.opt.Log("loaded in %s; measuring %d programs: %d rounds of %d runs each", time.Since(s.start).Round(time.Second), len(items), s.opt.Rounds, s.opt.Repeat)
	res, err := m.Measure(ctx, items, measure.Options{Rounds: s.opt.Rounds, Repeat: s.opt.Repeat,
		Progress: func(r, n int) { s.opt.Log("  round %d/%d", r, n) }})
	if err != nil {
		return nil, err
	}
	return s.Fit(res)
}

// Session is a calibration prepared: its programs loaded, waiting for
// their measurements. Measured with other programs in the same rounds (the
// accuracy report's), the calibration sees the machine as they do.
type Session struct {
	session
}

// Prepare loads everything a calibration measures at meter's hook.
func Prepare(ctx context.Context, meter *measure.Meter, opt Options) (*Session, error) {
	opt.Hook = meter.Hook()
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	if opt.Rounds <= 0 {
		opt.Rounds = map[bool]int{false: 15, true: 5}[opt.Short]
	}
	if opt.Repeat <= 0 {
		opt.Repeat = map[bool]int{false: 20000, true: 5000}[opt.Short]
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled"); strings.TrimSpace(string(b)) == "1" {
		return nil, fmt.Errorf("kernel.bpf_stats_enabled is 1: it adds a fixed cost to every program run and would skew every cost; set it to 0 (sysctl -w kernel.bpf_stats_enabled=0)")
	}
	s := &Session{session{opt: opt, meter: meter, start: time.Now(), load0: estimate.LoadAverage()}}
	opt.Log("compiling and loading the P4 micro-programs")
	if err := s.loadP4(ctx); err != nil {
		s.Close()
		return nil, err
	}
	opt.Log("loading the framework's chains and the NF cases")
	if err := s.loadFramework(); err != nil {
		s.Close()
		return nil, fmt.Errorf("framework: %w", err)
	}
	if err := s.loadNFs(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Items are the programs to measure, in the order Fit takes their results.
func (s *Session) Items() []measure.Item {
	items := make([]measure.Item, len(s.items))
	for i, it := range s.items {
		items[i] = it.Item
	}
	return items
}

// Close unloads everything.
func (s *Session) Close() { s.close() }

// Fit makes the profile from the measurements of Items.
func (s *Session) Fit(res []measure.Result) (*estimate.Profile, error) {
	if len(res) != len(s.items) {
		return nil, fmt.Errorf("%d measurements for %d programs", len(res), len(s.items))
	}
	for i := range s.items {
		s.items[i].res = res[i]
		if w := s.items[i].verdict; w != nil && res[i].Diverged == "" && res[i].Verdict != *w {
			s.items[i].res.Diverged = fmt.Sprintf("verdict %d when measured, %d when loaded", res[i].Verdict, *w)
		}
		if d := s.items[i].res.Diverged; d != "" {
			s.opt.Log("warning: %s measured another path: %s", s.items[i].Name, d)
		}
	}
	s.correctSingles()
	p := &estimate.Profile{Format: estimate.Format, Unit: "ns", Hook: s.opt.Hook, Host: estimate.ThisHost(), CPUMHz: estimate.CPUMHz(),
		Created: time.Now().UTC().Truncate(time.Second), Method: "full", Rounds: s.opt.Rounds, Repeat: s.opt.Repeat, Costs: map[string]float64{}}
	if s.opt.Short {
		p.Method = "short"
	}
	if err := s.fit(p); err != nil {
		return nil, err
	}
	p.Load = s.load0 + " → " + estimate.LoadAverage()
	p.Took = time.Since(s.start).Round(time.Second).String()
	s.opt.Log("calibrated in %s", p.Took)
	return p, nil
}

// item is one measured program and what the fit needs of it.
type item struct {
	measure.Item
	group string // "p4", "framework", or an NF type
	uses  []estimate.Use
	res   measure.Result
	// anchor items are measured in short mode.
	anchor bool
	// verdict is what the item's program gave when loaded (check), if
	// checked
	verdict *uint32
}

type session struct {
	opt    Options
	meter  *measure.Meter
	start  time.Time
	load0  string
	items  []item
	closer []func()
	// frameworkModel is the fitted lines' value for the framework's
	// measurements.
	frameworkModel map[string]float64
}

func (s *session) close() {
	for i := len(s.closer) - 1; i >= 0; i-- {
		s.closer[i]()
	}
}

func (s *session) add(it item, prog *ebpf.Program) {
	s.items = append(s.items, it)
	s.closer = append(s.closer, func() { prog.Close() })
}
