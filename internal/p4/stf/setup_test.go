package stf

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/p4/p4test"
	"golang.org/x/sys/unix"
)

// The set-up the runtime, extern, replication and STF tests share.

// needRoot skips tb unless it runs as root (loading programs,
// BPF_PROG_TEST_RUN).
func needRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root (loads eBPF programs)")
	}
}

// compile compiles a program with its eBPF objects, for a test that needs
// root.
func compile(tb testing.TB, opt p4.Options) *p4.Result {
	tb.Helper()
	needRoot(tb)
	res, err := p4.Compile(context.Background(), opt)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// compileFile compiles the program at path (p4test.File). Without mods the
// result is shared by every test of the run that compiles the same file
// (the XDP and TC tests of a program, the tests that load it again): the
// tests change the maps they load, never the result.
func compileFile(tb testing.TB, path string, mods ...func(*p4.Options)) *p4.Result {
	tb.Helper()
	if len(mods) > 0 {
		return compile(tb, p4test.File(tb, path, mods...))
	}
	needRoot(tb)
	v, _ := compiled.LoadOrStore(path, &sharedResult{})
	sr := v.(*sharedResult)
	sr.once.Do(func() {
		opt, err := p4.FromFile(path)
		if err == nil {
			sr.res, err = p4.Compile(context.Background(), opt)
		}
		sr.err = err
	})
	if sr.err != nil {
		tb.Fatal(sr.err)
	}
	return sr.res
}

// compiled holds compileFile's shared results by path.
var compiled sync.Map

type sharedResult struct {
	once sync.Once
	res  *p4.Result
	err  error
}

// load loads res's object for hook ("xdp" or "tc"); the runner is closed
// when the test ends.
func load(tb testing.TB, res *p4.Result, hook string) *Runner {
	tb.Helper()
	r, err := LoadResult(res, hook)
	if err != nil {
		tb.Fatalf("%s: %v", hook, err)
	}
	tb.Cleanup(r.Close)
	return r
}

// runOnEveryCPU runs pkt through r's program repeat times on every CPU at
// once (BPF_PROG_TEST_RUN, each goroutine pinned to its CPU) and returns
// the number of CPUs.
func runOnEveryCPU(t *testing.T, r *Runner, pkt []byte, repeat int) int {
	t.Helper()
	n := runtime.NumCPU()
	var wg sync.WaitGroup
	for cpu := 0; cpu < n; cpu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			unix.SchedSetaffinity(0, &set)
			if _, _, err := r.Prog.Benchmark(pkt, repeat, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return n
}
