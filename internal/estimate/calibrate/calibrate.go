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
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/estimate/p4path"
	"github.com/edgenf/edgenf/internal/nfrig"
	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/rt"
)

// Options of a calibration.
type Options struct {
	Hook datapath.Hook
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
	start := time.Now()
	load0 := loadavg()
	s := &session{opt: opt}
	defer s.close()
	var err error
	if s.meter, err = measure.New(opt.Hook); err != nil {
		return nil, err
	}
	opt.Log("compiling and loading the P4 micro-programs")
	if err := s.loadP4(ctx); err != nil {
		return nil, err
	}
	opt.Log("loading the framework's chains and the NF cases")
	if err := s.loadFramework(); err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	if err := s.loadNFs(); err != nil {
		return nil, err
	}
	items := make([]measure.Item, len(s.items))
	for i, it := range s.items {
		items[i] = it.Item
	}
	opt.Log("loaded in %s; measuring %d programs: %d rounds of %d runs each", time.Since(start).Round(time.Second), len(items), opt.Rounds, opt.Repeat)
	res, err := s.meter.Measure(ctx, items, measure.Options{Rounds: opt.Rounds, Repeat: opt.Repeat,
		Progress: func(r, n int) { opt.Log("  round %d/%d", r, n) }})
	if err != nil {
		return nil, err
	}
	for i := range s.items {
		s.items[i].res = res[i]
	}
	s.correctSingles()
	p := &estimate.Profile{Format: estimate.Format, Unit: "ns", Hook: opt.Hook, Host: estimate.ThisHost(), CPUMHz: estimate.CPUMHz(),
		Created: time.Now().UTC().Truncate(time.Second), Method: "full", Rounds: opt.Rounds, Repeat: opt.Repeat, Costs: map[string]float64{}}
	if opt.Short {
		p.Method = "short"
	}
	if err := s.fit(p); err != nil {
		return nil, err
	}
	p.Load = load0 + " → " + loadavg()
	opt.Log("calibrated in %s", time.Since(start).Round(time.Second))
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
}

type session struct {
	opt    Options
	meter  *measure.Meter
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

// ---------- P4 ----------

// p4Loaded is a micro-program compiled and loaded.
type p4Loaded struct {
	c       p4Case
	entry   *ebpf.Program
	uses    []estimate.Use
	verdict string
	err     error
}

// loadP4 compiles and loads the micro-programs, as many at once as there
// are CPUs (clang and the verifier are the slow parts), each worker with a
// datapath of its own.
func (s *session) loadP4(ctx context.Context) error {
	var cases []p4Case
	for _, c := range p4Cases() {
		if !s.opt.Short || c.anchor {
			cases = append(cases, c)
		}
	}
	out := make([]p4Loaded, len(cases))
	var wg sync.WaitGroup
	var mu sync.Mutex
	work := make(chan int)
	for w := 0; w < runtime.NumCPU(); w++ {
		root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfc-%d-%d", os.Getpid(), w))
		dp, err := datapath.Open(root)
		if err != nil {
			close(work)
			wg.Wait()
			return err
		}
		mu.Lock()
		s.closer = append(s.closer, func() { dp.Destroy() })
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = s.loadP4Case(ctx, dp, uint32(i+1), cases[i])
			}
		}()
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, l := range out {
		if l.entry != nil {
			s.closer = append(s.closer, func() { l.entry.Close() })
		}
	}
	for _, l := range out {
		if l.err != nil {
			return fmt.Errorf("P4 micro-program %q: %w", l.c.name, l.err)
		}
		if err := s.check(l.entry, p4Frame, l.verdict); err != nil {
			return fmt.Errorf("P4 micro-program %q: %w", l.c.name, err)
		}
		it := item{Item: measure.Item{Name: l.c.name, Prog: l.entry, Frame: p4Frame}, group: "p4", uses: l.uses, anchor: l.c.anchor}
		if s.opt.Hook == datapath.TC && uses(l.uses, p4path.TermHeadAdjust) {
			it.Single = true
		}
		s.items = append(s.items, it)
		if l.c.singleRef && s.opt.Hook == datapath.TC {
			// the same program measured a run per call too: what that
			// costs more is taken off the programs measured so
			s.items = append(s.items, item{Item: measure.Item{Name: l.c.name + singleSuffix, Prog: l.entry, Frame: p4Frame, Single: true}, group: "single"})
		}
	}
	return nil
}

// singleSuffix names the measurement of a program run once per call.
const singleSuffix = " (a run per call)"

func uses(us []estimate.Use, term string) bool {
	for _, u := range us {
		if u.Term == term && u.N != 0 {
			return true
		}
	}
	return false
}

// correctSingles takes off the measurements made a run per call what
// that way of measuring adds (cold caches between calls), as the
// program measured both ways shows.
func (s *session) correctSingles() {
	var single, batched float64
	for _, it := range s.items {
		if it.group == "single" {
			single = it.res.NS
			for _, o := range s.items {
				if o.Name+singleSuffix == it.Name {
					batched = o.res.NS
				}
			}
		}
	}
	if single == 0 || batched == 0 {
		return
	}
	for i := range s.items {
		if s.items[i].Single && s.items[i].group != "single" {
			s.items[i].res.NS -= single - batched
			s.items[i].res.Lo -= single - batched
			s.items[i].res.Hi -= single - batched
		}
	}
	s.opt.Log("programs that grow or shrink the frame were measured a run per call; %.1f ns taken off them (what that adds to the same program otherwise)", single-batched)
}

func (s *session) loadP4Case(ctx context.Context, dp *datapath.Datapath, slot uint32, c p4Case) (l p4Loaded) {
	l.c = c
	res, err := p4.Compile(ctx, p4.Options{Path: "calibrate.p4", Source: []byte(c.source()), NoObject: true, Clang: s.opt.Clang})
	if err != nil {
		l.err = err
		return
	}
	obj, err := p4.CompileC(ctx, s.opt.Clang, res.C, string(s.opt.Hook))
	if err != nil {
		l.err = err
		return
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		l.err = err
		return
	}
	dc, err := dp.LoadCube(fmt.Sprintf("p4c%d", slot), s.opt.Hook, slot, spec, nil)
	if err != nil {
		l.err = res.ExplainLoadError(err)
		return
	}
	for _, port := range []uint32{0, 1} {
		if l.err = dc.SetHop(port, datapath.Hop{Kind: datapath.DstIface, Ifindex: nfrig.FakeIfindex}); l.err != nil {
			return
		}
	}
	prog, err := rt.New(res.Info, dc.Maps())
	if err != nil {
		l.err = err
		return
	}
	if c.entries != nil {
		if l.err = c.entries(prog); l.err != nil {
			return
		}
	}
	if c.meter != "" {
		if l.err = prog.SetMeter(c.meter, 0, 1023, &rt.MeterConfig{CIR: 1e9, CBurst: 1e6, PIR: 2e9, PBurst: 2e6}); l.err != nil {
			return
		}
	}
	entries := map[string]int{}
	for _, t := range res.Info.Edgenf.Tables {
		if es, err := prog.Entries(t.Name); err == nil {
			entries[t.Name] = len(es)
		}
	}
	if l.uses, l.verdict, l.err = pathUses(res, entries, c.path); l.err != nil {
		return
	}
	l.entry, l.err = dp.Entry(s.opt.Hook, datapath.Hop{Kind: datapath.DstCube, Slot: slot, Port: 0}, dc)
	return
}

// pathUses are the uses and the verdict of the path spec selects (the
// typical one if "").
func pathUses(res *p4.Result, entries map[string]int, spec string) ([]estimate.Use, string, error) {
	pr, err := p4path.Enumerate(res.Program, p4path.Options{Entries: entries})
	if err != nil {
		return nil, "", err
	}
	if spec == "" {
		free := estimate.Profile{Costs: map[string]float64{}}
		t := p4path.Summarise(pr.Price(&free)).Typical
		return t.Uses, t.Verdict, nil
	}
	paths, err := pr.Select(spec)
	if err != nil {
		return nil, "", err
	}
	if len(paths) != 1 {
		return nil, "", fmt.Errorf("path %q selects %d paths, want one", spec, len(paths))
	}
	return paths[0].Uses, paths[0].Verdict, nil
}

// check runs prog once and compares its verdict with the path's: a
// measurement of a packet that went elsewhere (dropped on an error, say)
// would price the wrong thing.
func (s *session) check(prog *ebpf.Program, frame []byte, verdict string) error {
	want := map[datapath.Hook]map[string]uint32{
		datapath.XDP: {"send": datapath.XDPRedirect, "drop": datapath.XDPDrop, "punt": datapath.XDPDrop},
		datapath.TC:  {"send": datapath.TCActRedirect, "drop": datapath.TCActShot, "punt": datapath.TCActShot},
	}[s.opt.Hook][verdict]
	got, err := s.meter.Verdict(prog, frame)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("verdict %d, want %d (%s): the measured packet does not take the path the model prices", got, want, verdict)
	}
	return nil
}

// ---------- NF models ----------

func (s *session) loadNFs() error {
	for _, m := range estimate.Models() {
		if m.Cases == nil {
			continue
		}
		cases := m.Cases(s.opt.Hook)
		for i, c := range cases {
			if s.opt.Short && i > 0 {
				break
			}
			if err := s.loadNF(m, c); err != nil {
				return fmt.Errorf("%s case %q: %w", m.Type, c.Name, err)
			}
		}
	}
	return nil
}

func (s *session) loadNF(m *estimate.Model, c estimate.Case) error {
	typ, err := cube.Lookup(m.Type)
	if err != nil {
		return err
	}
	model := c.Cube.Clone()
	model.Hook = s.opt.Hook
	if model.Name == "" {
		model.Name = m.Type
	}
	uses := c.Uses
	if uses == nil {
		var err error
		in := c.InPort
		if typ.Transparent {
			in = c.Dir.String()
		}
		if uses, _, err = m.Uses(nil, model, in); err != nil {
			return err
		}
	}
	r, err := nfrig.Open(typ, model)
	if err != nil {
		return err
	}
	s.closer = append(s.closer, r.Close)
	if c.Setup != nil {
		if err := c.Setup(r.Handle()); err != nil {
			return err
		}
	}
	var entry *ebpf.Program
	if typ.Transparent {
		entry, err = r.TransparentEntry(c.Dir)
	} else {
		entry, err = r.Entry(c.InPort)
	}
	if err != nil {
		return err
	}
	for _, f := range c.Warm {
		if _, err := s.meter.Verdict(entry, f); err != nil {
			entry.Close()
			return err
		}
	}
	if err := s.check(entry, c.Frame, "send"); err != nil {
		entry.Close()
		return err
	}
	s.add(item{Item: measure.Item{Name: m.Type + ": " + c.Name, Prog: entry, Frame: c.Frame}, group: m.Type, uses: uses}, entry)
	return nil
}

// ---------- fit ----------

func (s *session) fit(p *estimate.Profile) error {
	byGroup := map[string][]observation{}
	var order []string
	for _, it := range s.items {
		if it.group == "framework" || it.group == "single" {
			continue
		}
		if _, ok := byGroup[it.group]; !ok {
			order = append(order, it.group)
		}
		byGroup[it.group] = append(byGroup[it.group], observation{name: it.Name, uses: it.uses, ns: it.res.NS})
	}
	if err := s.fitFramework(p); err != nil {
		return err
	}
	var builtin *estimate.Profile
	if s.opt.Short {
		b, err := estimate.Builtin(s.opt.Hook)
		if err != nil {
			return err
		}
		builtin = b
	}
	for _, g := range order {
		terms := groupTerms(g)
		var costs map[string]float64
		var err error
		if s.opt.Short {
			costs = scaled(builtin, terms, byGroup[g])
		} else if costs, err = fit(terms, byGroup[g]); err != nil {
			return fmt.Errorf("fitting %s: %w", g, err)
		}
		for t, v := range costs {
			p.Costs[t] = v
		}
	}
	for _, it := range s.items {
		mdl := s.frameworkModel[it.Name]
		if it.group != "framework" {
			mdl = priceUses(p.Costs, it.uses)
		}
		p.Measurements = append(p.Measurements, estimate.Measurement{Name: it.Name, Group: it.group, NS: round(it.res.NS), Lo: round(it.res.Lo), Hi: round(it.res.Hi), Model: round(mdl)})
	}
	return nil
}

// groupTerms are the terms a group of observations fits.
func groupTerms(group string) []string {
	var ts []string
	if group == "p4" {
		for _, t := range p4path.Terms {
			ts = append(ts, t.Name)
		}
		return ts
	}
	if m, ok := estimate.ModelOf(group); ok {
		for _, t := range m.Terms {
			ts = append(ts, t.Name)
		}
	}
	return ts
}

// scaled is the built-in profile's costs of terms, times the median ratio
// of the observations to what the built-in profile predicts for them.
func scaled(b *estimate.Profile, terms []string, obs []observation) map[string]float64 {
	var ratios []float64
	for _, o := range obs {
		if pred := priceUses(b.Costs, o.uses); pred > 0 && o.ns > 0 {
			ratios = append(ratios, o.ns/pred)
		}
	}
	k := 1.0
	if len(ratios) > 0 {
		sort.Float64s(ratios)
		k = ratios[len(ratios)/2]
	}
	out := map[string]float64{}
	for _, t := range terms {
		out[t] = round(b.Costs[t] * k)
	}
	return out
}

func round(x float64) float64 { return float64(int64(x*100+0.5*sign(x))) / 100 }

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
