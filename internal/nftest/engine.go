package nftest

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
)

var seq atomic.Uint32

// Engine opens a real engine (the daemon's core, no HTTP) with its own pin
// root and state file, for end-to-end tests in namespaces. Everything it
// creates is destroyed when the test ends.
func Engine(t testing.TB) *engine.Engine {
	t.Helper()
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfe-%d-%d", os.Getpid(), seq.Add(1)))
	e, err := engine.Open(engine.Config{
		PinRoot:   root,
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Destroy(); err != nil {
			t.Errorf("destroy engine: %v", err)
		}
	})
	return e
}

// MustUpdate applies a topology change or fails the test.
func MustUpdate(t testing.TB, e *engine.Engine, fn func(*cube.Topology) error) {
	t.Helper()
	if err := e.Update(fn); err != nil {
		t.Fatal(err)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", b)
	return len(b), nil
}
