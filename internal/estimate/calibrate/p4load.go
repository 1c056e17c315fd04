package calibrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/estimate/p4path"
	"github.com/edgenf/edgenf/internal/nfrig"
	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

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
		want, err := s.check(l.entry, p4Frame, l.verdict)
		if err != nil {
			return fmt.Errorf("P4 micro-program %q: %w", l.c.name, err)
		}
		it := item{Item: measure.Item{Name: l.c.name, Prog: l.entry, Frame: p4Frame}, group: "p4", uses: l.uses, anchor: l.c.anchor, verdict: &want}
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
	pr, err := p4path.Enumerate(res.Program, p4path.Options{Entries: entries, FrameBytes: len(p4Frame)})
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
// would price the wrong thing. It returns the verdict.
func (s *session) check(prog *ebpf.Program, frame []byte, verdict string) (uint32, error) {
	want := map[datapath.Hook]map[string]uint32{
		datapath.XDP: {"send": datapath.XDPRedirect, "drop": datapath.XDPDrop, "punt": datapath.XDPDrop},
		datapath.TC:  {"send": datapath.TCActRedirect, "drop": datapath.TCActShot, "punt": datapath.TCActShot},
	}[s.opt.Hook][verdict]
	got, err := s.meter.Verdict(prog, frame)
	if err != nil {
		return 0, err
	}
	if got != want {
		return 0, fmt.Errorf("verdict %d, want %d (%s): the measured packet does not take the path the model prices", got, want, verdict)
	}
	return got, nil
}
