package datapath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/testenv"
)

// oldLayout pins at path, in place of the map there, an empty one whose
// value is grow octets longer: an earlier release's layout.
func oldLayout(t *testing.T, path string, grow uint32) {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := m.Info()
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	old, err := ebpf.NewMap(&ebpf.MapSpec{Type: info.Type, KeySize: info.KeySize, ValueSize: info.ValueSize + grow, MaxEntries: info.MaxEntries, Flags: info.Flags})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := old.Pin(path); err != nil {
		t.Fatal(err)
	}
}

func setAsidePins(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-old") {
			out = append(out, e.Name())
		}
	}
	return out
}

// One shared map of another layout renews them all, the earlier ones set
// aside (still pinned: a program array nothing pins is emptied by the
// kernel) until DropRenewed; a cube pinned over the earlier ones is stale
// until reloaded; a start with nothing to renew checks nothing.
func TestOpenRenewsEverySharedMapWhenOneChanged(t *testing.T) {
	dp, root := openRenewable(t)
	c, err := dp.LoadCube("x", datapath.XDP, 3, portfwdSpec(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := dp.RenewedMaps(); len(got) != 0 {
		t.Fatalf("a first open renewed %v", got)
	}
	dp.Close()

	oldLayout(t, filepath.Join(root, "scratch"), 16)
	dp, err = datapath.Open(root)
	if err != nil {
		t.Fatalf("open over a scratch of another layout: %v", err)
	}
	renewed := dp.RenewedMaps()
	if len(renewed) != 10 {
		t.Fatalf("renewed %v, want the ten shared maps", renewed)
	}
	for _, r := range renewed {
		if r.Map == "scratch" && !strings.Contains(r.Reason, "ValueSize") || r.Map != "scratch" && !strings.Contains(r.Reason, "made anew with scratch") {
			t.Errorf("renewed %s", r)
		}
	}
	if got := setAsidePins(t, root); len(got) != 10 {
		t.Fatalf("set aside %v, want the ten earlier maps still pinned", got)
	}
	why, err := dp.StaleFramework("x")
	if err != nil || !strings.Contains(why, "framework map") {
		t.Fatalf("a cube over the earlier maps is not stale: %q %v", why, err)
	}
	c, _, err = dp.UpgradeCube("x", datapath.XDP, 3, portfwdSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if why, err := dp.StaleFramework("x"); why != "" || err != nil {
		t.Fatalf("the reloaded cube is stale: %q %v", why, err)
	}
	if err := dp.DropRenewed(); err != nil {
		t.Fatal(err)
	}
	if got := setAsidePins(t, root); len(got) != 0 {
		t.Fatalf("still set aside: %v", got)
	}
	dp.Close()

	dp, err = datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	if got := dp.RenewedMaps(); len(got) != 0 {
		t.Fatalf("an open over fitting maps renewed %v", got)
	}
}

// openRenewable opens a datapath under a bpffs directory of its own, which
// the test's end removes through a datapath opened anew (the test may have
// renewed or set aside the maps the first one holds).
func openRenewable(t *testing.T) (*datapath.Datapath, string) {
	t.Helper()
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfu-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if dp, err := datapath.Open(root); err == nil {
			dp.Destroy()
		} else {
			os.RemoveAll(root)
		}
	})
	return dp, root
}

// panelEntry is the program id in slot of the program array pinned at
// path, and the array's id.
func panelEntry(t *testing.T, path string, slot uint32) (ebpf.MapID, ebpf.ProgramID) {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	var prog ebpf.ProgramID
	if err := m.Lookup(slot, &prog); err != nil {
		t.Fatalf("%s slot %d: %v", path, slot, err)
	}
	return id, prog
}

// A renewal cut short (A to B: some interfaces still on A's maps, some
// already on B's) and then a start of a third release C whose maps fit
// neither: B's maps are set aside beside A's, both still pinned, so the
// programs that run over either keep their panels (a program array
// nothing pins is emptied by the kernel: the interfaces on it would drop)
// until DropRenewed, once every interface runs C's programs.
func TestTwoRenewalsWithACrashBetweenKeepEveryGeneration(t *testing.T) {
	dp, root := openRenewable(t)
	var err error
	load := func(dp *datapath.Datapath, name string, slot uint32) {
		t.Helper()
		c, err := dp.LoadCube(name, datapath.XDP, slot, portfwdSpec(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	load(dp, "on-a", 3)
	dp.Close()

	// A to B, cut short: on-a still runs over A's maps, on-b over B's.
	oldLayout(t, filepath.Join(root, "scratch"), 16)
	if dp, err = datapath.Open(root); err != nil {
		t.Fatal(err)
	}
	load(dp, "on-b", 4)
	dp.Close()
	panelA, progA := panelEntry(t, filepath.Join(root, "xdp_panel-old"), 3)
	panelB, progB := panelEntry(t, filepath.Join(root, "xdp_panel"), 4)

	// C: its owner map is of another size than A's and B's.
	dp, err = datapath.OpenBuild(root, func(specs map[string]*ebpf.MapSpec) { specs["tc_owner"].MaxEntries++ })
	if err != nil {
		t.Fatalf("release C over an unfinished renewal: %v", err)
	}
	if got := len(dp.RenewedMaps()); got != 10 {
		t.Errorf("renewed %v, want the ten shared maps", dp.RenewedMaps())
	}
	for _, c := range []struct {
		name  string
		panel ebpf.MapID
		slot  uint32
		prog  ebpf.ProgramID
	}{{"on-a", panelA, 3, progA}, {"on-b", panelB, 4, progB}} {
		m, err := ebpf.NewMapFromID(c.panel)
		if err != nil {
			t.Errorf("%s's panel is gone: %v", c.name, err)
			continue
		}
		var prog ebpf.ProgramID
		err = m.Lookup(c.slot, &prog)
		m.Close()
		if err != nil || prog != c.prog {
			t.Errorf("%s's panel lost its program: slot %d holds %d (%v), want %d", c.name, c.slot, prog, err, c.prog)
		}
		if why, err := dp.StaleFramework(c.name); why == "" || err != nil {
			t.Errorf("%s runs over an earlier release's maps but is not stale: %q %v", c.name, why, err)
		}
	}
	if err := dp.DropRenewed(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), "-old") {
			t.Errorf("still set aside after DropRenewed: %s", e.Name())
		}
	}
	dp.Close()
}
