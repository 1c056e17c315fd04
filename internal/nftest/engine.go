package nftest

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
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
	testenv.NeedRoot(t)
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

// CPUTime is the CPU time (user and system) the process has used: what a
// change costs, steadier than wall time on a shared machine.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// Attachment is a way cubes of a hook meet interfaces. TC has two: TCX and
// the classic clsact qdisc with cls_bpf (kernels before 6.6), and the TC
// end-to-end tests run in both.
type Attachment struct {
	Name string
	Hook datapath.Hook
	TC   datapath.TCAttach // "" for XDP
}

// Attachments are XDP, TC by TCX and TC the classic way.
var Attachments = []Attachment{
	{"xdp", datapath.XDP, ""},
	{"tc", datapath.TC, datapath.TCAttachTCX},
	{"tc-classic", datapath.TC, datapath.TCAttachClassic},
}

// TCAttachments are the TC ones.
var TCAttachments = Attachments[1:]

// Use makes the datapaths (engines, daemons) t opens from now on attach TC
// programs a's way. t must not be parallel.
func (a Attachment) Use(t *testing.T) {
	if a.TC != "" {
		t.Setenv(datapath.TCAttachEnv, string(a.TC))
	}
}

// CheckTCAttach fails t unless the TC ingress of ifname runs edgenf's
// program a's way (a TCX link or a classic filter of edgenf's), and only
// that way, so a test meant for one way cannot pass on the other. With a
// "", the way is the one this process's datapaths use ($EDGENF_TC_ATTACH).
func CheckTCAttach(t testing.TB, ifname string, a datapath.TCAttach) {
	t.Helper()
	if a == "" {
		a = datapath.TCAttach(os.Getenv(datapath.TCAttachEnv))
	}
	if a == "" || a == datapath.TCAttachAuto {
		a = datapath.TCAttachTCX
		if datapath.HaveTCX() != nil {
			a = datapath.TCAttachClassic
		}
	}
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	var classic []string
	if fs, err := netlink.FilterList(l, netlink.HANDLE_MIN_INGRESS); err == nil {
		for _, f := range fs {
			if bf, ok := f.(*netlink.BpfFilter); ok && strings.HasPrefix(bf.Name, "edgenf-") {
				classic = append(classic, bf.Name)
			}
		}
	}
	res, err := link.QueryPrograms(link.QueryOptions{Target: l.Attrs().Index, Attach: ebpf.AttachTCXIngress})
	if err != nil && !errors.Is(err, ebpf.ErrNotSupported) {
		t.Fatal(err)
	}
	tcx := 0
	if res != nil {
		tcx = len(res.Programs)
	}
	switch {
	case a == datapath.TCAttachClassic && (len(classic) != 1 || tcx != 0):
		t.Fatalf("%s: want one classic edgenf filter at TC ingress and no TCX program, have filters %v and %d TCX programs", ifname, classic, tcx)
	case a == datapath.TCAttachTCX && (len(classic) != 0 || tcx != 1):
		t.Fatalf("%s: want one TCX program at TC ingress and no classic filter, have filters %v and %d TCX programs", ifname, classic, tcx)
	}
}
