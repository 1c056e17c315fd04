package nftest

import (
	"fmt"
	"log/slog"
	"net"
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
	return EngineWith(t, engine.Config{})
}

// EngineWith is Engine with more settings (tenants, quotas); the pin root,
// state file and logger are the test's.
func EngineWith(t testing.TB, cfg engine.Config) *engine.Engine {
	t.Helper()
	cfg.PinRoot = filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfe-%d-%d", os.Getpid(), seq.Add(1)))
	cfg.StateFile = filepath.Join(t.TempDir(), "state.json")
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	e, err := engine.Open(cfg)
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

// FreeUDPPort returns a UDP port free on 127.0.0.1 now, for a cube's
// control-plane socket (a upf's PFCP endpoint) in a test.
func FreeUDPPort(t testing.TB) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}
