// Command gen regenerates the tree's eBPF objects (see bpf.Object): every
// *.bpf.c for both hooks, with the flags in bpf/cflags; it also compiles
// the P4 runtime's headers on their own (bpf.Checks). `make bpf` runs it
// from the tree's root; -o writes the objects under another directory
// instead (the freshness check compares such a build with the committed
// objects).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/edgenf/edgenf/bpf"
)

func main() {
	out := flag.String("o", ".", "directory to write the objects under (their paths kept)")
	root := flag.String("root", ".", "the source tree's root")
	flag.Parse()
	if err := run(*root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bpf/gen:", err)
		os.Exit(1)
	}
}

func run(root, out string) error {
	objs, err := bpf.Objects(root)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("no *.bpf.c under %s (run from the tree's root)", root)
	}
	checks, err := bpf.Checks(root)
	if err != nil {
		return err
	}
	clang := bpf.Clang()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, runtime.NumCPU())
	)
	for _, o := range append(objs, checks...) {
		dst, what := "", "CHECK "+o.Source+" ("+o.Hook+")"
		if o.Path != "" {
			if dst, err = filepath.Abs(filepath.Join(out, o.Path)); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			what = "CLANG " + o.Path
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fmt.Printf("  %s\n", what)
			if err := o.Build(context.Background(), clang, root, dst); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
