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
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
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
	opt := p4Options(c)
	opt.Clang = s.opt.Clang
	pc, err := LoadP4(ctx, dp, slot, s.opt.Hook, opt, 0)
	if err != nil {
		l.err = err
		return
	}
	l.entry = pc.Entry
	if c.entries != nil {
		if l.err = c.entries(pc.RT); l.err != nil {
			return
		}
	}
	if c.meter != "" {
		if l.err = pc.RT.SetMeter(c.meter, 0, 1023, &tableruntime.MeterConfig{CIR: 1e9, CBurst: 1e6, PIR: 2e9, PBurst: 2e6}); l.err != nil {
			return
		}
	}
	l.uses, l.verdict, l.err = pathUses(pc.Result, pc.Entries(), c.path)
	return
}

// P4Cube is a P4 program compiled for one hook and loaded as a cube of a
// datapath, its ports 0 to 7 peered with an interface.
type P4Cube struct {
	Result *p4.Result
	Prog   *datapath.Program
	RT     *tableruntime.Program // its tables, counters, meters
	// Entry is the direct entry of a hop into the port LoadP4 was given
	// (the caller closes it).
	Entry *ebpf.Program
}

// LoadP4 compiles a program for hook (the C for that hook alone) and
// loads it into dp at slot, entered on port in.
func LoadP4(ctx context.Context, dp *datapath.Datapath, slot uint32, hook datapath.Hook, opt p4.Options, in uint32) (*P4Cube, error) {
	opt.NoObject = true
	res, err := p4.Compile(ctx, opt)
	if err != nil {
		return nil, err
	}
	obj, err := p4.CompileC(ctx, opt.Clang, res.C, string(hook))
	if err != nil {
		return nil, err
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		return nil, err
	}
	dc, err := dp.LoadCube(fmt.Sprintf("p4c%d", slot), hook, slot, spec, nil)
	if err != nil {
		return nil, res.ExplainLoadError(err)
	}
	for port := uint32(0); port < 8; port++ {
		if err := dc.SetHop(port, datapath.Hop{Kind: datapath.DstIface, Ifindex: nfrig.FakeIfindex}); err != nil {
			return nil, err
		}
	}
	prog, err := tableruntime.New(res.Info, dc.Maps())
	if err != nil {
		return nil, err
	}
	entry, err := dp.Entry(hook, datapath.Hop{Kind: datapath.DstCube, Slot: slot, Port: in}, dc)
	if err != nil {
		return nil, err
	}
	return &P4Cube{Result: res, Prog: dc, RT: prog, Entry: entry}, nil
}

// Entries counts the entries of each table.
func (c *P4Cube) Entries() map[string]int {
	out := map[string]int{}
	for _, t := range c.Result.Info.Edgenf.Tables {
		if es, err := c.RT.Entries(t.Name); err == nil {
			out[t.Name] = len(es)
		}
	}
	return out
}

func p4Options(c p4Case) p4.Options {
	return p4.Options{Path: "calibrate.p4", Source: []byte(c.source())}
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
		cases := m.Cases(false)
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
	nc, err := LoadCase(s.meter, m, c)
	if err != nil {
		return err
	}
	s.closer = append(s.closer, nc.Close)
	if err := s.check(nc.Entry, c.Frame, "send"); err != nil {
		return err
	}
	s.items = append(s.items, item{Item: measure.Item{Name: m.Type + ": " + c.Name, Prog: nc.Entry, Frame: c.Frame}, group: m.Type, uses: nc.Uses})
	return nil
}

// NFCase is an NF type's case loaded (nfrig) at the meter's hook: the
// program a packet enters by, and what the model says the packet uses.
type NFCase struct {
	Cube  *cube.Cube
	Entry *ebpf.Program
	Uses  []estimate.Use
	rig   *nfrig.Rig
	stop  func() // the case's Background
}

// Close removes the case's datapath.
func (c *NFCase) Close() {
	if c.stop != nil {
		c.stop()
	}
	if c.Entry != nil {
		c.Entry.Close()
	}
	c.rig.Close()
}

// LoadCase loads an NF case: its cube, the entry of its port (or of a hop
// whose stack is the cube, for a transparent one), state set up and warm
// frames run.
func LoadCase(meter *measure.Meter, m *estimate.Model, c estimate.Case) (*NFCase, error) {
	typ, err := cube.Lookup(m.Type)
	if err != nil {
		return nil, err
	}
	model := c.Cube.Clone()
	model.Hook = meter.Hook()
	if model.Name == "" {
		model.Name = m.Type
	}
	uses := c.Uses
	if uses == nil {
		in := c.InPort
		if typ.Transparent {
			in = c.Dir.String()
		}
		if uses, _, err = m.Uses(nil, model, in); err != nil {
			return nil, err
		}
	}
	r, err := nfrig.Open(typ, model)
	if err != nil {
		return nil, err
	}
	nc := &NFCase{Cube: model, Uses: uses, rig: r}
	if c.Setup != nil {
		if err := c.Setup(r.Handle()); err != nil {
			r.Close()
			return nil, err
		}
	}
	if c.Background != nil {
		if nc.stop, err = c.Background(r.Handle()); err != nil {
			r.Close()
			return nil, err
		}
	}
	if typ.Transparent {
		nc.Entry, err = r.TransparentEntry(c.Dir)
	} else {
		nc.Entry, err = r.Entry(c.InPort)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := warm(meter, r, c, nc.Entry); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// warm runs a case's warm frames (on its WarmPort's entry, or entry).
func warm(m *measure.Meter, r *nfrig.Rig, c estimate.Case, entry *ebpf.Program) error {
	if c.WarmPort != "" && c.WarmPort != c.InPort {
		e, err := r.Entry(c.WarmPort)
		if err != nil {
			return err
		}
		defer e.Close()
		entry = e
	}
	for _, f := range c.Warm {
		if _, err := m.Verdict(entry, f); err != nil {
			return err
		}
	}
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
