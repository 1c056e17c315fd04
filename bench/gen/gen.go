// Package gen drives the in-kernel traffic generator: BPF_PROG_RUN with
// BPF_F_TEST_XDP_LIVE_FRAMES runs bench_gen on a template frame Repeat times;
// each frame is redirected into a veth and travels the topology for real.
package gen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/bench/kern"
)

// Options bound a run: it stops at Packets frames or after Duration,
// whichever comes first (at least one must be set).
type Options struct {
	Packets  uint64        // total frames (all CPUs); a minimum: an interrupted BPF_PROG_RUN restarts and may repeat a batch
	Duration time.Duration // wall time
	CPUs     int           // CPUs generating, starting at FirstCPU (default 1)
	FirstCPU int           // first CPU used (wraps around NumCPU)
	// Chunk is the number of frames per BPF_PROG_RUN call. 0: adaptive,
	// aiming at ~50 ms per call (each call has a fixed set-up and
	// tear-down cost of a few ms, hidden by running 2 workers per CPU).
	Chunk uint32
}

// Result of a run: frames produced by the generator program.
type Result struct {
	Sent    uint64
	Elapsed time.Duration
}

// Run generates frame (template, see kern.Frame) with objs.Gen until the
// packet count or the duration is reached.
func Run(ctx context.Context, objs *kern.Objects, frame []byte, o Options) (Result, error) {
	r, err := Start(ctx, objs, frame, o)
	if err != nil {
		return Result{}, err
	}
	return r.Wait()
}

// Running is a generator run in progress.
type Running struct {
	objs   *kern.Objects
	before uint64
	start  time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	tids   []int
}

const maxDuration = 10 * time.Minute

// Start launches the generator workers (2 per CPU, pinned) and returns at
// once; Stop or Wait end it.
func Start(ctx context.Context, objs *kern.Objects, frame []byte, o Options) (*Running, error) {
	if o.Packets == 0 && o.Duration == 0 {
		return nil, errors.New("gen: unbounded run (set Packets or Duration)")
	}
	if o.Duration == 0 || o.Duration > maxDuration {
		o.Duration = maxDuration
	}
	if o.CPUs <= 0 {
		o.CPUs = 1
	}
	if err := objs.SetTemplate(frame); err != nil {
		return nil, err
	}
	before, err := objs.GenCounter()
	if err != nil {
		return nil, err
	}
	r := &Running{objs: objs, before: before, start: time.Now()}
	ctx, r.cancel = context.WithTimeout(ctx, o.Duration)
	ncpu := runtime.NumCPU()
	workers := 2 * o.CPUs
	for i := 0; i < workers; i++ {
		var quota uint64
		if o.Packets > 0 {
			quota = o.Packets / uint64(workers)
			if i == 0 {
				quota += o.Packets % uint64(workers)
			}
			if quota == 0 {
				continue
			}
		}
		r.wg.Add(1)
		go r.worker(ctx, frame, o, (o.FirstCPU+i/2)%ncpu, quota)
	}
	return r, nil
}

func (r *Running) worker(ctx context.Context, frame []byte, o Options, cpu int, quota uint64) {
	defer r.wg.Done()
	// The thread keeps its affinity and dies with this goroutine.
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set)
	r.mu.Lock()
	r.tids = append(r.tids, unix.Gettid())
	r.mu.Unlock()
	chunk := o.Chunk
	adaptive := chunk == 0
	if adaptive {
		chunk = 4096
	}
	var done uint64
	for ctx.Err() == nil && (quota == 0 || done < quota) {
		n := chunk
		if quota != 0 && quota-done < uint64(n) {
			n = uint32(quota - done)
		}
		t0 := time.Now()
		_, err := r.objs.Gen.Run(&ebpf.RunOptions{Data: frame, Repeat: n, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
		if err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Errorf("gen: BPF_PROG_RUN: %w", err))
			r.mu.Unlock()
			return
		}
		done += uint64(n)
		if adaptive {
			// Aim at 50 ms per call, never more than 4x growth at once.
			el := time.Since(t0)
			if el < 40*time.Millisecond && chunk < 1<<24 {
				chunk = uint32(min(float64(chunk)*4, float64(chunk)*50e6/float64(max(el.Nanoseconds(), 1))))
			} else if el > 100*time.Millisecond && chunk > 1024 {
				chunk /= 2
			}
		}
	}
}

// CPUTime returns the CPU time the generator threads have used so far. The
// kernel runs the whole path of a frame (veth, stack, XDP/TC programs, the
// sink) in softirq right after each batch, in the generating thread, and
// without IRQ time accounting that time is charged to the thread: frames per
// CPU second is a per-core rate that holds up when other jobs share the
// CPUs (unless softirqs are pushed to ksoftirqd, which shows as a higher
// rate than wall-clock Mpps can reach).
func (r *Running) CPUTime() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum time.Duration
	for _, tid := range r.tids {
		var ts unix.Timespec
		// The CPU-time clock of thread tid: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
		clk := int32(^uint32(tid)<<3 | 6)
		if err := unix.ClockGettime(clk, &ts); err == nil {
			sum += time.Duration(ts.Nano())
		}
	}
	return sum
}

// Stop ends the run and returns what was generated.
func (r *Running) Stop() (Result, error) {
	r.cancel()
	return r.Wait()
}

// Wait waits for the run to reach its bound.
func (r *Running) Wait() (Result, error) {
	r.wg.Wait()
	r.cancel()
	el := time.Since(r.start)
	after, err := r.objs.GenCounter()
	if err != nil {
		return Result{}, err
	}
	return Result{Sent: after - r.before, Elapsed: el}, errors.Join(r.errs...)
}

// Paced sends n single frames at most pps per second (one BPF_PROG_RUN each,
// so frames don't queue behind each other): the stream for latency
// measurements. Bounded by ctx and by n/pps + 5 s.
func Paced(ctx context.Context, objs *kern.Objects, frame []byte, n int, pps int) (Result, error) {
	if pps <= 0 {
		pps = 10000
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(n)*time.Second/time.Duration(pps)+5*time.Second)
	defer cancel()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := objs.SetTemplate(frame); err != nil {
		return Result{}, err
	}
	before, err := objs.GenCounter()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * time.Second / time.Duration(pps))
		for time.Now().Before(due) {
			if d := time.Until(due); d > 200*time.Microsecond {
				time.Sleep(d - 100*time.Microsecond)
			}
		}
		if _, err := objs.Gen.Run(&ebpf.RunOptions{Data: frame, Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES}); err != nil {
			return Result{}, fmt.Errorf("gen: BPF_PROG_RUN: %w", err)
		}
	}
	el := time.Since(start)
	after, err := objs.GenCounter()
	if err != nil {
		return Result{}, err
	}
	return Result{Sent: after - before, Elapsed: el}, ctx.Err()
}
