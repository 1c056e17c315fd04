// Package bench is the benchmark harness: it builds every scenario's
// topology with internal/netlab, drives it with the in-kernel live-frames
// generator, counts at the XDP sink, and measures interleaved repetitions so
// that drift of this shared machine hits every scenario of a group alike.
package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/edgenf/edgenf/bench/gen"
	"github.com/edgenf/edgenf/bench/kern"
	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/netlab"
)

// Config of a run.
type Config struct {
	Quick       bool
	Only        []string      // scenario names, groups or group/name; empty: all (quick: those marked Quick)
	Reps        int           // repetitions per scenario
	Warmup      time.Duration // per trial, before the measured window
	Window      time.Duration // measured window per trial
	FrameSize   int           // bytes of L2 frame (no FCS)
	Flows       int           // distinct flows
	CPUs        int           // generator CPUs
	LatPackets  int           // paced packets per latency measurement (0: none)
	LatPPS      int           // their rate
	CostRepeat  uint32        // Program.Run repeat for per-packet cost
	Log         func(format string, args ...any)
	DisableCost bool
}

// DefaultConfig returns the full (quick=false) or quick configuration.
func DefaultConfig(quick bool) Config {
	c := Config{Reps: 5, Warmup: 200 * time.Millisecond, Window: 500 * time.Millisecond, FrameSize: 64, Flows: 16,
		CPUs: 1, LatPackets: 5000, LatPPS: 20000, CostRepeat: 1_000_000}
	if quick {
		c.Quick, c.Reps, c.Warmup, c.Window, c.LatPackets, c.CostRepeat = true, 2, 80*time.Millisecond, 150*time.Millisecond, 1000, 100_000
	}
	return c
}

// Results of a run (the JSON file).
type Results struct {
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	// Stopped says what cut the run short (the -timeout, a signal, a
	// group's error) and which groups it never reached; empty: it ran
	// every group it selected.
	Stopped string        `json:"stopped,omitempty"`
	Command string        `json:"command"`
	Machine Machine       `json:"machine"`
	Config  ConfigJSON    `json:"config"`
	Groups  []GroupResult `json:"groups"`
}

// ConfigJSON is the serialisable part of Config.
type ConfigJSON struct {
	Quick      bool    `json:"quick"`
	Reps       int     `json:"reps"`
	WarmupS    float64 `json:"warmup_s"`
	WindowS    float64 `json:"window_s"`
	FrameSize  int     `json:"frame_size"`
	Flows      int     `json:"flows"`
	CPUs       int     `json:"generator_cpus"`
	LatPackets int     `json:"latency_packets"`
	LatPPS     int     `json:"latency_pps"`
}

// Machine describes where the run happened.
type Machine struct {
	Kernel string `json:"kernel"`
	// Load averages (1, 5, 15 min) at the start and the end of the run:
	// other work on the machine shows here.
	LoadStart string `json:"loadavg_start"`
	LoadEnd   string `json:"loadavg_end"`
	CPU       string `json:"cpu"`
	CPUs      int    `json:"cpus"`
	MemMB     int    `json:"mem_mb"`
	Go        string `json:"go"`
}

// GroupResult is one group of scenarios compared to its baseline.
type GroupResult struct {
	Name      string           `json:"name"`
	Baseline  string           `json:"baseline"`
	Scenarios []ScenarioResult `json:"scenarios"`
}

// ScenarioResult holds every repetition and the summaries.
type ScenarioResult struct {
	Name     string    `json:"name"`
	Doc      string    `json:"doc"`
	Baseline bool      `json:"baseline"`
	Param    float64   `json:"param,omitempty"`
	Mpps     []float64 `json:"mpps"` // per repetition
	Median   float64   `json:"mpps_median"`
	Min      float64   `json:"mpps_min"`
	Max      float64   `json:"mpps_max"`
	Ratios   []float64 `json:"ratios,omitempty"` // per repetition, to the mean of the baseline trials just before and after
	Ratio    float64   `json:"ratio"`            // median of Ratios
	// The same per CPU second used by the generator threads (see
	// gen.Running.CPUTime): robust to other jobs sharing the CPUs.
	MppsCPU     []float64 `json:"mpps_per_cpu_s,omitempty"`
	MedianCPU   float64   `json:"mpps_per_cpu_s_median,omitempty"`
	RatiosCPU   []float64 `json:"ratios_cpu,omitempty"`
	RatioCPU    float64   `json:"ratio_cpu,omitempty"`
	RatioCPUMin float64   `json:"ratio_cpu_min,omitempty"`
	RatioCPUMax float64   `json:"ratio_cpu_max,omitempty"`
	// Spread is how much the repetitions disagree: a ratio whose
	// interquartile range holds its target is not told apart from it by
	// this run.
	Spread   *Spread           `json:"spread,omitempty"`
	RatioMin float64           `json:"ratio_min"`
	RatioMax float64           `json:"ratio_max"`
	Loss     float64           `json:"loss"` // 1 - sink/generated over all trials
	LatP50   float64           `json:"latency_p50_ns,omitempty"`
	LatP99   float64           `json:"latency_p99_ns,omitempty"`
	LatP999  float64           `json:"latency_p999_ns,omitempty"`
	CostNs   float64           `json:"cost_ns,omitempty"`
	Info     map[string]string `json:"info,omitempty"`
	Error    string            `json:"error,omitempty"`
}

type instance struct {
	s         scenario.Scenario
	env       *scenario.Env
	objs      *kern.Objects
	topo      *scenario.Topology
	frm       []byte
	res       *ScenarioResult
	gen, sink uint64
	lats      [][3]float64
	lastCPU   float64
	costs     []float64
}

// Select returns the scenarios a config runs, grouped, in report order.
func Select(c Config) ([][]scenario.Scenario, error) {
	var groups [][]scenario.Scenario
	idx := map[string]int{}
	want := map[string]bool{}
	for _, o := range c.Only {
		want[o] = true
	}
	found := map[string]bool{}
	for _, s := range scenario.All() {
		ok := len(want) == 0 && (!c.Quick || s.Quick)
		if k := s.Group + "/" + s.Name; want[s.Name] || want[s.Group] || want[k] {
			ok = true
			found[s.Name], found[s.Group], found[k] = true, true, true
		}
		if !ok {
			continue
		}
		if _, seen := idx[s.Group]; !seen {
			idx[s.Group] = len(groups)
			groups = append(groups, nil)
		}
		groups[idx[s.Group]] = append(groups[idx[s.Group]], s)
	}
	for o := range want {
		if !found[o] {
			return nil, fmt.Errorf("bench: unknown scenario or group %q (have: %s)", o, scenario.Names())
		}
	}
	// A group measured without its baseline gets it added.
	for i, g := range groups {
		if !g[0].Baseline {
			for _, s := range scenario.All() {
				if s.Group == g[0].Group && s.Baseline {
					groups[i] = append([]scenario.Scenario{s}, g...)
					break
				}
			}
		}
	}
	return groups, nil
}

// Run measures the selected scenarios.
func Run(ctx context.Context, c Config) (*Results, error) {
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	groups, err := Select(c)
	if err != nil {
		return nil, err
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled"); strings.TrimSpace(string(b)) == "1" {
		// Run-time statistics add a fixed cost to every BPF program run,
		// the baselines' too: every ratio would lean towards 1.
		return nil, errors.New("kernel.bpf_stats_enabled is 1 (someone is profiling BPF programs): it adds about 80 ns to every program run and skews every ratio; set it to 0 first (sysctl -w kernel.bpf_stats_enabled=0)")
	}
	res := &Results{Started: time.Now(), Command: command(), Machine: machine(),
		Config: ConfigJSON{Quick: c.Quick, Reps: c.Reps, WarmupS: c.Warmup.Seconds(), WindowS: c.Window.Seconds(),
			FrameSize: c.FrameSize, Flows: c.Flows, CPUs: c.CPUs, LatPackets: c.LatPackets, LatPPS: c.LatPPS}}
	finish := func(err error, left [][]scenario.Scenario) (*Results, error) {
		res.Duration = time.Since(res.Started).Round(time.Second).String()
		res.Machine.LoadEnd = estimate.LoadAverage()
		if err != nil {
			var names []string
			for _, g := range left {
				names = append(names, g[0].Group)
			}
			res.Stopped = fmt.Sprintf("%v; groups not measured: %s", err, strings.Join(names, ", "))
		}
		return res, err
	}
	for i, g := range groups {
		if err := ctx.Err(); err != nil {
			return finish(err, groups[i:])
		}
		gr, err := runGroup(ctx, c, g)
		if err != nil {
			return finish(err, groups[i:])
		}
		res.Groups = append(res.Groups, gr)
	}
	return finish(nil, nil)
}

func runGroup(ctx context.Context, c Config, group []scenario.Scenario) (GroupResult, error) {
	gr := GroupResult{Name: group[0].Group}
	lab, err := netlab.New(netlab.UniquePrefix())
	if err != nil {
		return gr, err
	}
	defer lab.Close()
	var insts []*instance
	defer func() {
		for _, in := range insts {
			in.env.Close()
			in.objs.Close()
		}
	}()
	for i, s := range group {
		sr := &ScenarioResult{Name: s.Name, Doc: s.Doc, Baseline: s.Baseline, Param: s.Param}
		if s.Baseline {
			gr.Baseline = s.Name
		}
		objs, err := kern.Load(kern.Options{Flows: c.Flows})
		if err != nil {
			return gr, err
		}
		env := scenario.NewEnv(ctx, lab, objs, fmt.Sprintf("s%d", i), c.Quick)
		in := &instance{s: s, env: env, objs: objs, res: sr}
		insts = append(insts, in)
		c.Log("setup %s/%s", s.Group, s.Name)
		t0 := time.Now()
		topo, err := s.Setup(env)
		if err == nil {
			err = in.attach(topo, c)
		}
		if errors.Is(err, scenario.ErrSkip) {
			insts = insts[:len(insts)-1]
			env.Close()
			objs.Close()
			continue
		}
		if err != nil {
			sr.Error = err.Error()
			c.Log("  %s: %v", s.Name, err)
			continue
		}
		in.topo = topo
		sr.Info = topo.Info
		if sr.Info == nil {
			sr.Info = map[string]string{}
		}
		if _, ok := sr.Info["setup"]; !ok {
			sr.Info["setup"] = time.Since(t0).Round(time.Millisecond).String()
		}
	}
	// Settle: loading many programs leaves deferred kernel work (RCU
	// callbacks, JIT, freeing); give it time and warm every path once,
	// unmeasured.
	sleep(ctx, 500*time.Millisecond)
	for _, in := range insts {
		if in.topo == nil {
			continue
		}
		r, err := gen.Start(ctx, in.objs, in.frm, gen.Options{Duration: 2 * c.Warmup, CPUs: c.CPUs, FirstCPU: runtime.NumCPU() - 1})
		if err == nil {
			_, err = r.Wait()
		}
		if err != nil {
			in.res.Error = err.Error()
			in.topo = nil
		}
	}
	// Interleaved repetitions: each round is A B A C A D … A, where A is the
	// baseline, so every trial has baseline trials right before and after
	// it; the order of B, C, D … rotates from round to round.
	var base *instance
	var others []*instance
	for _, in := range insts {
		if in.s.Baseline {
			base = in
		} else {
			others = append(others, in)
		}
	}
	run := func(in *instance) float64 {
		if in == nil || in.topo == nil || ctx.Err() != nil {
			if in != nil {
				in.lastCPU = 0
			}
			return 0
		}
		v, err := in.trial(ctx, c)
		if err != nil {
			in.res.Error = err.Error()
			in.topo = nil
			c.Log("  %s: %v", in.s.Name, err)
			return 0
		}
		return v
	}
	reps := c.Reps
	for _, in := range others {
		if !c.Quick && in.s.Reps > reps {
			reps = in.s.Reps
		}
	}
	for rep := 0; rep < reps; rep++ {
		prev := run(base)
		prevCPU := cpuOf(base)
		for k := range others {
			in := others[(k+rep)%len(others)]
			v := run(in)
			vCPU := in.lastCPU
			next := run(base)
			nextCPU := cpuOf(base)
			if v > 0 && prev > 0 && next > 0 {
				in.res.Ratios = append(in.res.Ratios, v/((prev+next)/2))
			}
			if v > 0 && vCPU > 0 && prevCPU > 0 && nextCPU > 0 {
				in.res.RatiosCPU = append(in.res.RatiosCPU, vCPU/((prevCPU+nextCPU)/2))
			}
			prev, prevCPU = next, nextCPU
		}
		if err := ctx.Err(); err != nil {
			return gr, err
		}
	}
	for _, in := range insts {
		in.summarise()
		gr.Scenarios = append(gr.Scenarios, *in.res)
	}
	return gr, nil
}

func cpuOf(in *instance) float64 {
	if in == nil {
		return 0
	}
	return in.lastCPU
}

func (in *instance) attach(t *scenario.Topology, c Config) error {
	if err := in.objs.SetGenTarget(t.GenIfindex); err != nil {
		return fmt.Errorf("generator target: %w", err)
	}
	lk, err := kern.AttachXDP(in.objs.Sink, t.SinkIfindex)
	if err != nil {
		return err
	}
	in.env.Defer(func() { lk.Close() })
	t.Frame.Size = c.FrameSize
	in.frm, err = t.Frame.Bytes()
	return err
}

// counted is the frames the scenario has delivered (at the sink) or, for
// dropping scenarios, handled.
func (in *instance) counted() uint64 {
	if in.topo.Handled != nil {
		n, _ := in.topo.Handled()
		return n
	}
	n, _, _, _ := in.objs.SinkCounts()
	return n
}

// emptyWindows bounds the windows a trial measures while they count no
// frame at all.
const emptyWindows = 4

func (in *instance) trial(ctx context.Context, c Config) (float64, error) {
	g0, _ := in.objs.GenCounter()
	s0 := in.counted()
	r, err := gen.Start(ctx, in.objs, in.frm, gen.Options{Duration: c.Warmup + emptyWindows*c.Window + 5*time.Second, CPUs: c.CPUs, FirstCPU: runtime.NumCPU() - 1})
	if err != nil {
		return 0, err
	}
	sleep(ctx, c.Warmup)
	p0 := in.counted()
	t0, cpu0 := time.Now(), r.CPUTime()
	sleep(ctx, c.Window)
	p1 := in.counted()
	// A machine busy elsewhere may not run the receive path at all within
	// a short window (quick mode, tests): such a window measured the
	// machine, not the scenario. Measure another, a few times at most.
	for n := 1; p1 == p0 && n < emptyWindows && ctx.Err() == nil; n++ {
		p0, t0, cpu0 = p1, time.Now(), r.CPUTime()
		sleep(ctx, c.Window)
		p1 = in.counted()
	}
	el, cpu := time.Since(t0), r.CPUTime()-cpu0
	if _, err := r.Stop(); err != nil {
		return 0, err
	}
	sleep(ctx, 20*time.Millisecond) // frames in flight
	g1, _ := in.objs.GenCounter()
	s1 := in.counted()
	in.gen += g1 - g0
	in.sink += s1 - s0
	mpps := float64(p1-p0) / el.Seconds() / 1e6
	in.res.Mpps = append(in.res.Mpps, mpps)
	var cpuMpps float64
	if cpu > 0 {
		cpuMpps = float64(p1-p0) / cpu.Seconds() / 1e6
		in.res.MppsCPU = append(in.res.MppsCPU, cpuMpps)
	}
	in.lastCPU = cpuMpps
	c.Log("  %-16s %7.3f Mpps  %7.3f Mpps/CPU-s", in.s.Name, mpps, cpuMpps)

	if c.LatPackets > 0 && in.topo.Handled == nil { // dropped frames have no latency
		if _, err := in.objs.Histogram(true); err != nil {
			return 0, err
		}
		in.objs.SetStamp(true)
		_, err := gen.Paced(ctx, in.objs, in.frm, c.LatPackets, c.LatPPS)
		in.objs.SetStamp(false)
		if err != nil {
			return 0, err
		}
		sleep(ctx, 20*time.Millisecond)
		h, err := in.objs.Histogram(true)
		if err != nil {
			return 0, err
		}
		in.lats = append(in.lats, [3]float64{kern.Quantile(h, .5), kern.Quantile(h, .99), kern.Quantile(h, .999)})
	}
	if in.topo.Cost != nil && !c.DisableCost {
		ns, err := in.topo.Cost()
		if err != nil {
			return 0, fmt.Errorf("cost: %w", err)
		}
		in.costs = append(in.costs, ns)
	}
	return mpps, nil
}

func (in *instance) summarise() {
	r := in.res
	if len(r.Mpps) == 0 {
		return
	}
	Summarise(r)
	if in.gen > 0 {
		r.Loss = 1 - float64(in.sink)/float64(in.gen)
		if r.Loss < 0 {
			r.Loss = 0
		}
	}
	if len(in.lats) > 0 {
		var a, b, c []float64
		for _, l := range in.lats {
			a, b, c = append(a, l[0]), append(b, l[1]), append(c, l[2])
		}
		r.LatP50, _, _ = stats(a)
		r.LatP99, _, _ = stats(b)
		r.LatP999, _, _ = stats(c)
	}
	if len(in.costs) > 0 {
		r.CostNs, _, _ = stats(in.costs)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), LoadStart: estimate.LoadAverage()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.Index(l, ":"); i > 0 {
					m.CPU = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		m.MemMB = kb / 1024
	}
	return m
}

// command is how this run was started, as a user would type it.
func command() string {
	if strings.Contains(os.Args[0], "go-build") && filepath.Base(os.Args[0]) == "bench" {
		return strings.TrimSpace("go run ./bench/cmd/bench " + strings.Join(os.Args[1:], " "))
	}
	return strings.Join(os.Args, " ")
}
