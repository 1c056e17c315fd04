// Package measure measures what one packet costs an eBPF program, in ns,
// with BPF_PROG_TEST_RUN: the calibration of the cost estimator and the
// accuracy report of `make bench` use it alike.
//
// BPF_PROG_TEST_RUN repeats one buffer, so a program that rewrites the frame
// (a TTL, MACs, NAT, an encapsulation) would see its own output from the
// second repetition on. Every measured run therefore enters through
// measure_restore (bpf/restore.bpf.c), which puts the original frame back
// and tail-calls the program under test; the restore's own cost, measured
// the same way with a program that does nothing, is subtracted.
//
// A shared machine drifts: items are measured in interleaved rounds
// (every item once per round, in a rotating order, each right after its
// reference), and each figure is the mean of the middle half of its rounds.
package measure

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"

	"github.com/edgenf/edgenf/internal/datapath"
)

var (
	//go:embed bpf/restore_xdp.o
	objXDP []byte
	//go:embed bpf/restore_tc.o
	objTC []byte
)

// MaxFrame is the largest frame a measurement can use.
const MaxFrame = 256

// Meter measures programs of one hook.
type Meter struct {
	hook    datapath.Hook
	coll    *ebpf.Collection
	restore *ebpf.Program
	null    *ebpf.Program
	frames  *ebpf.Map
	targets *ebpf.Map
	cur     *ebpf.Map
	next    uint32 // next free slot
	// ns is the private network namespace whose loopback holds the
	// restore entry at XDP (see New).
	ns netns.NsHandle
}

// Slots bounds the programs a meter measures (measure_targets).
const Slots = 1024

// New loads the restore entry for hook. At XDP it is attached to the
// loopback of a network namespace of its own, where no traffic flows: a
// program attached somewhere stays in the kernel's XDP dispatcher, and each
// BPF_PROG_TEST_RUN then skips the dispatcher's rebuild (tens of ms per
// call otherwise), and calls it as traffic on an interface does.
func New(hook datapath.Hook) (*Meter, error) {
	obj := objXDP
	if hook == datapath.TC {
		obj = objTC
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("measure: loading the restore entry: %w", err)
	}
	m := &Meter{hook: hook, coll: coll, restore: coll.Programs["measure_restore"], null: coll.Programs["measure_null"],
		frames: coll.Maps["measure_frames"], targets: coll.Maps["measure_targets"], cur: coll.Maps["measure_cur"], ns: -1}
	if hook == datapath.XDP {
		if err := m.pin(); err != nil {
			coll.Close()
			return nil, err
		}
	}
	return m, nil
}

// pin attaches the restore entry (generic XDP) to the loopback of a new
// network namespace, which Close removes.
func (m *Meter) pin() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		return fmt.Errorf("measure: a network namespace for the restore entry: %w", err)
	}
	defer netns.Set(orig)
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetXdpFdWithFlags(lo, m.restore.FD(), nl.XDP_FLAGS_SKB_MODE)
	}
	if err != nil {
		ns.Close()
		return fmt.Errorf("measure: attaching the restore entry: %w", err)
	}
	m.ns = ns
	return nil
}

// Close releases the programs, maps and namespace.
func (m *Meter) Close() {
	if m.ns >= 0 {
		m.ns.Close()
	}
	m.coll.Close()
}

// Hook is the hook the meter measures programs of.
func (m *Meter) Hook() datapath.Hook { return m.hook }

type frameValue struct {
	Len uint32
	B   [MaxFrame]byte
}

// slot binds prog (nil: the do-nothing program) and frame to a free slot.
func (m *Meter) slot(prog *ebpf.Program, frame []byte) (uint32, error) {
	if len(frame) < 14 || len(frame) > MaxFrame {
		return 0, fmt.Errorf("measure: frame of %d bytes (14 to %d)", len(frame), MaxFrame)
	}
	if m.next >= Slots {
		return 0, fmt.Errorf("measure: more than %d programs", Slots/2)
	}
	s := m.next
	m.next++
	v := frameValue{Len: uint32(len(frame))}
	copy(v.B[:], frame)
	if err := m.frames.Update(s, &v, ebpf.UpdateAny); err != nil {
		return 0, err
	}
	if prog == nil {
		prog = m.null
	}
	if err := m.targets.Update(s, prog, ebpf.UpdateAny); err != nil {
		return 0, fmt.Errorf("measure: the program cannot be tail-called from the restore entry: %w", err)
	}
	return s, nil
}

// slotOf binds an item to a free slot.
func (m *Meter) slotOf(it Item) (uint32, error) {
	if it.Ifindex != 0 && m.hook != datapath.XDP {
		return 0, fmt.Errorf("measure: a frame received on an interface (ifindex %d) is measured at XDP only", it.Ifindex)
	}
	return m.slot(it.Prog, it.Frame)
}

// release empties the slots from s on.
func (m *Meter) release(s uint32) {
	for i := s; i < m.next; i++ {
		m.targets.Delete(i)
	}
	m.next = s
}

// run returns the kernel's mean time per repetition of slot s, the frame
// received on ifindex (0: the loopback).
func (m *Meter) run(s uint32, frame []byte, ifindex, repeat int) (float64, uint32, error) {
	if err := m.cur.Update(uint32(0), s, ebpf.UpdateAny); err != nil {
		return 0, 0, err
	}
	ret, ns, err := testRun(m.restore, frame, ifindex, repeat)
	return ns, ret, err
}

// outcome is how one run through the restore entry ends: the verdict of
// its last repetition and the length of the frame that repetition left.
type outcome struct {
	verdict uint32
	len     int
}

func (o outcome) String() string {
	return fmt.Sprintf("verdict %d, a frame of %d bytes", o.verdict, o.len)
}

// end runs slot s repeat times on frame (received on ifindex) and returns
// how the last repetition ended.
func (m *Meter) end(s uint32, frame []byte, ifindex, repeat int) (outcome, error) {
	if err := m.cur.Update(uint32(0), s, ebpf.UpdateAny); err != nil {
		return outcome{}, err
	}
	// room for what a program adds (an encapsulation); Run cuts it to
	// the frame's length
	opt := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, MaxFrame+4096), Repeat: uint32(repeat)}
	if md := xdpContext(frame, ifindex); md != nil {
		opt.Context = *md
	}
	ret, err := m.restore.Run(opt)
	if err != nil {
		return outcome{}, err
	}
	return outcome{verdict: ret, len: len(opt.DataOut)}, nil
}

// runSingly is run with n calls of one repetition each: their mean.
func (m *Meter) runSingly(s uint32, frame []byte, ifindex, n int) (float64, uint32, error) {
	if err := m.cur.Update(uint32(0), s, ebpf.UpdateAny); err != nil {
		return 0, 0, err
	}
	n = max(n/20, 100) // a call costs far more than a run
	var total float64
	var ret uint32
	for i := 0; i < n; i++ {
		r, ns, err := testRun(m.restore, frame, ifindex, 1)
		if err != nil {
			return 0, 0, err
		}
		total += ns
		ret = r
	}
	return total / float64(n), ret, nil
}

// Verdict runs prog once on frame (through the restore entry) and returns
// its verdict: a check that a measured setup does what it should, and the
// way to warm state up (learning, connection tracking).
func (m *Meter) Verdict(prog *ebpf.Program, frame []byte) (uint32, error) {
	return m.VerdictOf(Item{Prog: prog, Frame: frame})
}

// VerdictOf is Verdict of an item: its program run once on its frame, as
// received on its interface.
func (m *Meter) VerdictOf(it Item) (uint32, error) {
	first := m.next
	defer m.release(first)
	s, err := m.slotOf(it)
	if err != nil {
		return 0, err
	}
	_, v, err := m.run(s, it.Frame, it.Ifindex, 1)
	return v, err
}

// Run runs prog n times on frame (through the restore entry, each time on
// the frame as given) and returns the last verdict: state a measurement
// needs built by the program itself (a capture's ring filled).
func (m *Meter) Run(prog *ebpf.Program, frame []byte, n int) (uint32, error) {
	first := m.next
	defer m.release(first)
	s, err := m.slot(prog, frame)
	if err != nil {
		return 0, err
	}
	_, v, err := m.run(s, frame, 0, n)
	return v, err
}

// Item is one program to measure on one frame.
type Item struct {
	Name  string
	Prog  *ebpf.Program
	Frame []byte
	// Single runs the program once per BPF_PROG_TEST_RUN call (Repeat
	// calls a sample) instead of Repeat times in one: for a program whose
	// frame the restore entry cannot put back run after run (at TC, one
	// that grows or shrinks the frame). Each call starts from a new frame.
	Single bool
	// Before, when set, runs before each run of the item, outside the
	// timing: it puts back state the item's own frames change (a
	// capture's ring, which they fill), so that every run measures alike.
	Before func() error
	// Repeat, when set, is the item's repetitions per run instead of the
	// measurement's: few enough that what Before restores holds through
	// a run.
	Repeat int
	// Ifindex, when set, is the interface (of the caller's network
	// namespace) the frame is received on, instead of the loopback: the program an interface runs (the framework's shared
	// stub) finds what to do with the frame by it. XDP only.
	Ifindex int
}

// Options of a measurement.
type Options struct {
	Rounds int // interleaved rounds (default 15)
	Repeat int // repetitions per run (default 20,000)
	// Progress, if set, is called after each round.
	Progress func(round, rounds int)
}

// Result is one item's cost per packet.
type Result struct {
	Name string  `json:"name"`
	NS   float64 `json:"ns"` // mean of the middle half of the rounds
	// Lo and Hi bound the middle half of the rounds: the spread a reader
	// judges the figure by.
	Lo      float64   `json:"lo"`
	Hi      float64   `json:"hi"`
	Samples []float64 `json:"-"`
	// Diverged, when set, says the runs measured another path than one
	// repetition takes (see Measure): the figure is not the item's.
	Diverged string `json:"diverged,omitempty"`
	// Verdict is the one repetition's verdict when the rounds started.
	// A caller that checked the verdict when it loaded the item compares
	// it: state the path needs may have expired in between (a NAT64's
	// opening TCP session lives 240 s, less than a calibration's loading
	// took under load: its frames were then dropped, and measured so).
	Verdict uint32 `json:"-"`
}

// Measure runs every item in interleaved rounds. Each sample is the item's
// run minus the reference run (restore → a program that does nothing) taken
// right before it on the same frame, plus the bare cost of that program
// alone: the program's own cost as BPF_PROG_TEST_RUN reports it for a frame
// that is new each time.
//
// Every run of an item should end with the verdict the item's program
// gives in one repetition, and a second repetition as the first (its
// verdict and the length of the frame it leaves, see firstTwo): one that
// ends otherwise did not see the same frame and state run after run
// (something the restore does not put back), and what it measured is
// another path, or the restore giving up. Such an item's Result says so
// (Diverged).
func (m *Meter) Measure(ctx context.Context, items []Item, opt Options) ([]Result, error) {
	if opt.Rounds <= 0 {
		opt.Rounds = 15
	}
	if opt.Repeat <= 0 {
		opt.Repeat = 20000
	}
	first := m.next
	defer m.release(first)
	type bound struct{ it, ref uint32 }
	bs := make([]bound, len(items))
	for i, it := range items {
		var err error
		if bs[i].it, err = m.slotOf(it); err != nil {
			return nil, fmt.Errorf("%s: %w", it.Name, err)
		}
		if bs[i].ref, err = m.slot(nil, it.Frame); err != nil {
			return nil, fmt.Errorf("%s: %w", it.Name, err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	want := make([]uint32, len(items))
	// second: how a second repetition ended, when not as the first
	second := make([]string, len(items))
	for i, it := range items {
		one, two, err := m.firstTwo(it, bs[i].it)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", it.Name, err)
		}
		want[i] = one.verdict
		if two != one {
			second[i] = fmt.Sprintf("a second repetition ended with %s, the first with %s", two, one)
		}
	}
	samples := make([][]float64, len(items))
	diverged := make([]int, len(items))
	last := make([]uint32, len(items))
	for r := 0; r < opt.Rounds; r++ {
		bare, err := m.bare(opt.Repeat)
		if err != nil {
			return nil, err
		}
		for k := range items {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			i := (k + r) % len(items)
			run := m.run
			if items[i].Single {
				run = m.runSingly
			}
			repeat := opt.Repeat
			if items[i].Repeat > 0 {
				repeat = items[i].Repeat
			}
			ref, _, err := run(bs[i].ref, items[i].Frame, items[i].Ifindex, repeat)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", items[i].Name, err)
			}
			if items[i].Before != nil {
				if err := items[i].Before(); err != nil {
					return nil, fmt.Errorf("%s: %w", items[i].Name, err)
				}
			}
			v, verdict, err := run(bs[i].it, items[i].Frame, items[i].Ifindex, repeat)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", items[i].Name, err)
			}
			if verdict != want[i] {
				diverged[i]++
				last[i] = verdict
			}
			samples[i] = append(samples[i], v-ref+bare)
		}
		if opt.Progress != nil {
			opt.Progress(r+1, opt.Rounds)
		}
	}
	out := make([]Result, len(items))
	for i, it := range items {
		out[i] = Summarise(it.Name, samples[i])
		out[i].Verdict = want[i]
		var why []string
		if second[i] != "" {
			why = append(why, second[i])
		}
		if diverged[i] > 0 {
			why = append(why, fmt.Sprintf("%d of %d runs ended with verdict %d, one repetition with %d", diverged[i], opt.Rounds, last[i], want[i]))
		}
		if why != nil {
			out[i].Diverged = strings.Join(why, "; ") + ": the repetitions after the first did not see the same frame and state"
		}
	}
	return out, nil
}

// firstTwo runs item (bound to slot s) once, then, unless it is measured
// a run per call, twice, each time after its Before: how the one
// repetition ended, and how the second of two did. A repetition that ends
// otherwise than the first, with another verdict or another frame length,
// ran another path: state outside the frame's bytes that the restore
// entry does not put back (at TC, an skb's header offsets after a
// decapsulation, its encapsulation mark, its protocol after a VLAN tag
// popped from the frame). The per-round verdict check alone misses those
// that still forward: the bridge's pop of a tag, at TC, left the restored
// frame tagged from the second repetition on, and forwarded it.
func (m *Meter) firstTwo(it Item, s uint32) (one, two outcome, err error) {
	runs := 2
	if it.Single {
		runs = 1
	}
	for n := 1; n <= runs; n++ {
		if it.Before != nil {
			if err := it.Before(); err != nil {
				return one, two, err
			}
		}
		o, err := m.end(s, it.Frame, it.Ifindex, n)
		if err != nil {
			return one, two, err
		}
		if n == 1 {
			one, two = o, o
		} else {
			two = o
		}
	}
	return one, two, nil
}

// bare is the cost of the do-nothing program run alone.
func (m *Meter) bare(repeat int) (float64, error) {
	_, ns, err := testRun(m.null, make([]byte, 64), 0, repeat)
	return ns, err
}

// Summarise is the mean of the middle half of samples, with its bounds.
func Summarise(name string, samples []float64) Result {
	r := Result{Name: name, Samples: samples}
	if len(samples) == 0 {
		return r
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	mid := s[len(s)/4 : len(s)-len(s)/4]
	if len(mid) == 0 {
		mid = s
	}
	t := 0.0
	for _, x := range mid {
		t += x
	}
	r.NS, r.Lo, r.Hi = t/float64(len(mid)), mid[0], mid[len(mid)-1]
	return r
}
