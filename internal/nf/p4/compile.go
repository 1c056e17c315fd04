package p4

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	p4c "github.com/edgenf/edgenf/internal/p4"
)

// Compiling a program is the slow part of a p4 cube: the engine has it done
// before it takes its lock (Type.Prepare), within the requester's time
// limit, and the results are kept in a bounded cache. Programs that cubes
// run, or that a change being made needs, are pinned; the others are
// evicted least recently used first.

var includeDirs []string // set once at start (SetIncludeDirs)

// SetIncludeDirs makes #include search the administrator's directories
// (edgenfd -p4-include-dir) after the built-in files. Clients cannot name
// directories: the daemon reads no file on their behalf.
func SetIncludeDirs(dirs []string) error {
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("P4 include directory %q: want an absolute path", d)
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("P4 include directory %q: not a directory", d)
		}
	}
	includeDirs = append([]string(nil), dirs...)
	return nil
}

// CompileOptions are the options the daemon compiles a cube's program with.
func CompileOptions(s *Settings) p4c.Options {
	return p4c.Options{Path: s.Program, Source: []byte(s.Source), Defines: s.Defines, IncludeDirs: includeDirs, CPUPort: s.CPUPort}
}

// Bounds of the cache of unpinned programs.
const (
	cacheMaxPrograms = 16
	cacheMaxBytes    = 256 << 20
	// validateLimit bounds a compile that validation has to run itself (a
	// restored cube, an evicted program): the administrator's limit.
	validateLimit = 5 * time.Minute
)

// CompileSlots bound the compiles the daemon runs at once, for whoever
// asks: a cube's program (REST, CLI, topology files) and a P4Runtime
// pipeline alike go through Compile, so no client, however many requests
// it makes at once, runs more than this many compilers on the machine. A
// compile that ran out of time returns at once, but the Go front end
// cannot be interrupted: its slot is freed when it really ends. (A send
// takes a slot, a receive gives it back.)
var CompileSlots = make(chan struct{}, 2)

type cached struct {
	key  [32]byte
	res  *p4c.Result
	size int64
	refs int
	elem *list.Element // in lru while unpinned
}

var programs = struct {
	sync.Mutex
	m     map[[32]byte]*cached
	lru   *list.List // unpinned, most recently used first
	bytes int64      // of the unpinned ones
}{m: map[[32]byte]*cached{}, lru: list.New()}

// keyOf identifies a compile: everything Compile is given.
func keyOf(s *Settings) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", s.Program, s.Source)
	for _, k := range sortedKeys(s.Defines) {
		fmt.Fprintf(h, "%s=%s\x00", k, s.Defines[k])
	}
	fmt.Fprintf(h, "cpu=%d\x00", s.CPUPort)
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return key
}

// lookup returns a cached program, marking it used.
func lookup(key [32]byte) (*p4c.Result, bool) {
	programs.Lock()
	defer programs.Unlock()
	e, ok := programs.m[key]
	if !ok {
		return nil, false
	}
	if e.elem != nil {
		programs.lru.MoveToFront(e.elem)
	}
	return e.res, true
}

// store adds a compiled program, pinned refs times, and evicts what is
// over the bounds.
func store(key [32]byte, r *p4c.Result, refs int) {
	programs.Lock()
	defer programs.Unlock()
	if e, ok := programs.m[key]; ok {
		for range refs {
			pinLocked(e)
		}
		return
	}
	e := &cached{key: key, res: r, size: int64(len(r.Object) + len(r.ObjectTC) + 2*len(r.C))}
	programs.m[key] = e
	e.elem = programs.lru.PushFront(e)
	programs.bytes += e.size
	for range refs {
		pinLocked(e)
	}
	evictLocked()
}

// pin keeps a cached program until unpin; it reports whether it is cached.
func pin(key [32]byte) bool {
	programs.Lock()
	defer programs.Unlock()
	e, ok := programs.m[key]
	if ok {
		pinLocked(e)
	}
	return ok
}

func pinLocked(e *cached) {
	if e.refs == 0 {
		programs.lru.Remove(e.elem)
		programs.bytes -= e.size
		e.elem = nil
	}
	e.refs++
}

func unpin(key [32]byte) {
	programs.Lock()
	defer programs.Unlock()
	e, ok := programs.m[key]
	if !ok || e.refs == 0 {
		return
	}
	if e.refs--; e.refs == 0 {
		e.elem = programs.lru.PushFront(e)
		programs.bytes += e.size
		evictLocked()
	}
}

func evictLocked() {
	for programs.lru.Len() > cacheMaxPrograms || (programs.bytes > cacheMaxBytes && programs.lru.Len() > 0) {
		e := programs.lru.Remove(programs.lru.Back()).(*cached)
		programs.bytes -= e.size
		delete(programs.m, e.key)
	}
}

// Compile compiles in one of the CompileSlots, giving up when ctx ends
// (context.DeadlineExceeded: the time limit), also while it waits for a
// slot.
func Compile(ctx context.Context, opt p4c.Options) (*p4c.Result, error) {
	select {
	case CompileSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	type result struct {
		r   *p4c.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-CompileSlots }()
		r, err := p4c.Compile(ctx, opt)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.err != nil && ctx.Err() != nil {
			return nil, ctx.Err() // clang was stopped: say why
		}
		return res.r, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// compiled returns the program of validated settings, compiling it if it
// is not cached (with the administrator's limit: the engine has had the
// requester's compiles done beforehand, by prepare).
func compiled(s *Settings) (*p4c.Result, error) {
	key := keyOf(s)
	if r, ok := lookup(key); ok {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), validateLimit)
	defer cancel()
	r, err := Compile(ctx, CompileOptions(s))
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("the compile did not finish within %s", validateLimit)
	}
	if err != nil {
		return nil, err
	}
	store(key, r, 0)
	return r, nil
}

// prepare is the p4 type's Prepare: it compiles the cube's program within
// ctx and keeps it pinned until release. Settings that do not decode are
// left to validation.
func prepare(ctx context.Context, c *cube.Cube) (func(), error) {
	v, err := cube.Decode("config", c.Config, &Settings{})
	if err != nil {
		return func() {}, nil
	}
	s := v.(*Settings)
	if err := s.normalize(); err != nil {
		return func() {}, nil
	}
	key := keyOf(s)
	if pin(key) {
		return func() { unpin(key) }, nil
	}
	r, err := Compile(ctx, CompileOptions(s))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, cube.Unprocessable("config.program", "%v", err)
	}
	store(key, r, 1)
	return func() { unpin(key) }, nil
}

// running pins the program a cube runs while it runs it (a controller's).
type running struct {
	mu  sync.Mutex
	key [32]byte
	set bool
}

// hold pins the program of settings s, releasing the one held before.
func (p *running) hold(s *Settings) {
	key := keyOf(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set && p.key == key {
		return
	}
	if pin(key) {
		if p.set {
			unpin(p.key)
		}
		p.key, p.set = key, true
	}
}

// release unpins the program held.
func (p *running) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set {
		unpin(p.key)
		p.set = false
	}
}
