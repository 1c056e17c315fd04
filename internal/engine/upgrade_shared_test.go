package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/netlab"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
)

// asOldRelease replaces the map pinned at path by an empty one of another
// layout, as an earlier release would have made it: a value valueGrow
// octets longer, or (valueGrow 0) of the same size with another BTF layout.
// The programs that run over the original keep it.
func asOldRelease(t *testing.T, path string, valueGrow uint32) {
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
	spec := &ebpf.MapSpec{Name: "old_release", Type: info.Type, KeySize: info.KeySize, ValueSize: info.ValueSize + valueGrow,
		MaxEntries: info.MaxEntries, Flags: info.Flags}
	if valueGrow == 0 {
		u8 := &btf.Int{Name: "u8", Size: 1}
		spec.Key = &btf.Int{Name: "u32", Size: 4}
		spec.Value = &btf.Struct{Name: "old_layout", Size: info.ValueSize, Members: []btf.Member{
			{Name: "raw", Type: &btf.Array{Index: &btf.Int{Name: "u32", Size: 4}, Type: u8, Nelems: info.ValueSize}}}}
	}
	old, err := ebpf.NewMap(spec)
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

// mapOf is the id of the map named name (a kernel name) prog runs over.
func mapOf(t *testing.T, prog *ebpf.Program, name string) ebpf.MapID {
	t.Helper()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := info.MapIDs()
	for _, id := range ids {
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue
		}
		mi, err := m.Info()
		m.Close()
		if err == nil && mi.Name == name {
			return id
		}
	}
	return 0
}

// pinnedID is the id of the map pinned at path.
func pinnedID(t *testing.T, path string) ebpf.MapID {
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
	return id
}

// linkProgram opens the program a pinned link runs.
func linkProgram(t *testing.T, path string) *ebpf.Program {
	t.Helper()
	l, err := link.LoadPinnedLink(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	p, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// twoHostsThroughTwoCubes: hosts a and b, each behind a veth peered with a
// portfwd cube; the cubes forward between them through each other, so
// frames take an interface program, a hop between cubes and a redirect.
func twoHostsThroughTwoCubes(t *testing.T, e *engine.Engine, hook datapath.Hook, net string) (a, b *netlab.Host, va, vb string) {
	t.Helper()
	lab := netlab.NewT(t)
	a, err := lab.Host("a")
	if err != nil {
		t.Fatal(err)
	}
	if b, err = lab.Host("b"); err != nil {
		t.Fatal(err)
	}
	if va, err = lab.Veth(a, "eth0", "va", net+".2/24"); err != nil {
		t.Fatal(err)
	}
	if vb, err = lab.Veth(b, "eth0", "vb", net+".3/24"); err != nil {
		t.Fatal(err)
	}
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "fa", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0, Peer: va}}}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "fb", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1, Peer: vb}}}); err != nil {
			return err
		}
		if err := tp.AddPort("fa", cube.Port{Name: "p1", Index: 1, Peer: "fb:p0"}); err != nil {
			return err
		}
		for _, c := range []string{"fa", "fb"} {
			for _, r := range []string{`{"in_port":"p0","out_port":"p1"}`, `{"in_port":"p1","out_port":"p0"}`} {
				if _, err := tp.PutEntry(c, "rules", json.RawMessage(r)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return a, b, va, vb
}

// TestUpgradeOverFrameworkMapsOfAnotherLayout: a daemon started over shared
// framework maps an earlier release pinned with another layout (here the
// metadata scratch, one struct edgenf_md longer) does not refuse to start
// and does not run its programs over them: it makes the map anew (the log
// names it and what changed), reloads every pinned cube although built
// from the same object (they run over the old map), and attaches the
// interface programs, the copy machine and the injector again over the
// new one. Traffic flows; the next start adopts everything.
func TestUpgradeOverFrameworkMapsOfAnotherLayout(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	a, _, va, _ := twoHostsThroughTwoCubes(t, e, datapath.XDP, "198.18.41")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Ping(ctx, "198.18.41.3", 2); err != nil {
		t.Fatalf("before the upgrade: %v", err)
	}
	e.Close()

	scratch := filepath.Join(cfg.PinRoot, "scratch")
	asOldRelease(t, scratch, 16)
	asOldRelease(t, filepath.Join(cfg.PinRoot, "copy_ring"), 16)
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	if got := e.Started(); got.Reloaded != 2 || got.Adopted != 0 || got.SharedMapsReset != 10 {
		t.Fatalf("start %+v, want both cubes reloaded and the ten shared maps renewed:\n%s", got, logs)
	}
	l := logs.String()
	for _, want := range []string{"framework map renewed", "map=scratch", "map=copy_ring", "ValueSize:", "map=xdp_panel", "made anew with copy_ring, scratch: the framework's maps change together", "it runs over the framework map scratch of an earlier edgenf"} {
		if !strings.Contains(l, want) {
			t.Fatalf("the log does not say %q:\n%s", want, l)
		}
	}
	if ents, err := os.ReadDir(cfg.PinRoot); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), "-old") {
				t.Errorf("the earlier release's map %s is still pinned after the start", e.Name())
			}
		}
	}
	cur := pinnedID(t, scratch)
	for _, c := range []string{"fa", "fb"} {
		p, err := ebpf.LoadPinnedProgram(filepath.Join(cfg.PinRoot, "cubes", c, "prog"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := mapOf(t, p, "scratch"); got != cur {
			t.Errorf("cube %s runs over scratch %d, the framework's is %d", c, got, cur)
		}
		p.Close()
	}
	sdir := filepath.Join(cfg.PinRoot, "ifaces", va+"_xdp_ingress")
	links := []string{filepath.Join(sdir, "link"), filepath.Join(cfg.PinRoot, "inject", "xdp_link")}
	if os.Getenv(datapath.TCAttachEnv) != string(datapath.TCAttachClassic) { // else a tc filter, not a link
		links = append(links, filepath.Join(sdir, "copier_link"))
	}
	for _, ln := range links {
		p := linkProgram(t, ln)
		sc, ring := mapOf(t, p, "scratch"), mapOf(t, p, "copy_ring")
		if sc == 0 && ring == 0 {
			t.Errorf("%s runs over neither the scratch nor the copy ring", ln)
		}
		if sc != 0 && sc != cur {
			t.Errorf("%s runs over scratch %d, the framework's is %d", ln, sc, cur)
		}
		if ring != 0 && ring != pinnedID(t, filepath.Join(cfg.PinRoot, "copy_ring")) {
			t.Errorf("%s runs over another copy ring than the framework's", ln)
		}
		p.Close()
	}
	// the interface enters the new panel: not the earlier release's,
	// which holds its programs until no link runs them
	p := linkProgram(t, filepath.Join(sdir, "link"))
	if got, want := mapOf(t, p, "xdp_panel"), pinnedID(t, filepath.Join(cfg.PinRoot, "xdp_panel")); got != want {
		t.Errorf("%s enters panel %d, the framework's is %d", va, got, want)
	}
	p.Close()
	if err := a.Ping(ctx, "198.18.41.3", 2); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
	e.Close()

	logs = &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	if got := e.Started(); got != (engine.StartReport{Adopted: 2, InterfacesAdopted: 2}) {
		t.Fatalf("start %+v, want both cubes and both interface programs adopted:\n%s", got, logs)
	}
	if err := a.Ping(ctx, "198.18.41.3", 2); err != nil {
		t.Fatalf("after a plain restart: %v", err)
	}
	e.Close()

	// a renewal cut short after setting aside its first map: the next
	// start finishes it (the pins left in place may be the earlier
	// release's) and reloads every cube over the new maps
	if err := os.Rename(filepath.Join(cfg.PinRoot, "config"), filepath.Join(cfg.PinRoot, "config-old")); err != nil {
		t.Fatal(err)
	}
	logs = &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	defer e.Close()
	if got := e.Started(); got.Reloaded != 2 || got.SharedMapsReset != 9 {
		t.Fatalf("start %+v, want both cubes reloaded and the nine maps left in place renewed:\n%s", got, logs)
	}
	if l := logs.String(); !strings.Contains(l, "an earlier start stopped in the middle of renewing") {
		t.Fatalf("the log does not say why:\n%s", l)
	}
	if ents, err := os.ReadDir(cfg.PinRoot); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), "-old") {
				t.Errorf("the earlier release's map %s is still pinned after the start", e.Name())
			}
		}
	}
	if err := a.Ping(ctx, "198.18.41.3", 2); err != nil {
		t.Fatalf("after finishing a renewal cut short: %v", err)
	}
}

// TestUpgradeOverInterfaceMapsOfAnotherLayout: the interface programs'
// maps pinned by an earlier release with another layout (the counters
// longer, the hops of the same size laid out differently) are replaced
// when the first interface is attached, the log names each; each
// interface's hop is written into the new map before its link moves, and
// traffic flows at both hooks. A map the current stub no longer uses is
// removed, said, and not counted as a reset.
func TestUpgradeOverInterfaceMapsOfAnotherLayout(t *testing.T) {
	for i, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			cfg := restartable(t)
			e := openAt(t, cfg)
			net := fmt.Sprintf("198.18.%d", 42+i)
			a, _, _, vb := twoHostsThroughTwoCubes(t, e, hook, net)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := a.Ping(ctx, net+".3", 2); err != nil {
				t.Fatalf("before the upgrade: %v", err)
			}
			e.Close()
			set := filepath.Join(cfg.PinRoot, "ifprogs", string(hook)+"_ingress")
			asOldRelease(t, filepath.Join(set, "enf_if_stats"), 8)
			asOldRelease(t, filepath.Join(set, "enf_if_hops"), 0)
			// a map an earlier stub used and this one does not
			gone, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
			if err != nil {
				t.Fatal(err)
			}
			err = gone.Pin(filepath.Join(set, "enf_gone"))
			gone.Close()
			if err != nil {
				t.Fatal(err)
			}
			logs := &syncBuffer{}
			cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
			e = openAt(t, cfg)
			defer e.Close()
			if got := e.Started(); got != (engine.StartReport{Adopted: 2, SharedMapsReset: 2}) {
				t.Fatalf("start %+v, want the cubes adopted and two interface maps reset:\n%s", got, logs)
			}
			l := logs.String()
			if _, err := os.Stat(filepath.Join(set, "enf_gone")); !os.IsNotExist(err) {
				t.Errorf("a map the stub no longer uses is still pinned: %v", err)
			}
			for _, want := range []string{"interface program's map reset", "map=enf_if_stats", "map=enf_if_hops", "member raw",
				"interface program's map removed: the current program does not use it", "map=enf_gone"} {
				if !strings.Contains(l, want) {
					t.Fatalf("the log does not say %q:\n%s", want, l)
				}
			}
			if err := a.Ping(ctx, net+".3", 2); err != nil {
				t.Fatalf("after the upgrade: %v", err)
			}
			if hook == datapath.TC {
				return // the links below are TCX's or XDP's
			}
			sb := filepath.Join(cfg.PinRoot, "ifaces", vb+"_"+string(hook)+"_ingress")
			p := linkProgram(t, filepath.Join(sb, "link"))
			defer p.Close()
			if got, want := mapOf(t, p, "enf_if_hops"), pinnedID(t, filepath.Join(set, "enf_if_hops")); got != want {
				t.Fatalf("%s runs over hop map %d, the pinned one is %d", vb, got, want)
			}
		})
	}
}

// forwarderToSink makes the cubes the single-cube upgrade tests restart
// over: portfwd pf sends what enters p0 out of p1, into portfwd sink.
func forwarderToSink(t *testing.T, e *engine.Engine, hook datapath.Hook) {
	t.Helper()
	update(t, e, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "sink", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0}}}); err != nil {
			return err
		}
		if err := tp.AddCube(&cube.Cube{Name: "pf", Type: "portfwd", Hook: hook, Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1, Peer: "sink:p0"}}}); err != nil {
			return err
		}
		_, err := tp.PutEntry("pf", "rules", json.RawMessage(`{"in_port":"p0","out_port":"p1"}`))
		return err
	})
}

// TestHookChangedWhilePinned: the state says tc for cubes whose pinned
// programs run at xdp (a state restored from another site, or edited while
// the daemon was down). The cubes are reloaded at tc, not adopted nor put
// down: their program arrays, which the kernel ties to one program type,
// are reset, their tables kept; the xdp panel no longer holds their old
// programs, and the log says why.
func TestHookChangedWhilePinned(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	forwarderToSink(t, e, datapath.XDP)
	frame := make([]byte, 60)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0xd, 0x02, 0, 0, 0, 0, 0xa, 0x08, 0x00})
	if res, err := e.RunCube("pf", 0, frame); err != nil || res.Port != 1 {
		t.Fatalf("before: port %d, %v", res.Port, err)
	}
	e.Close()
	f, err := state.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Topology.Cubes() {
		c.Hook = datapath.TC
	}
	f.Gen++
	if err := state.Save(cfg.StateFile, f); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	defer e.Close()
	if got := e.Started(); got.Reloaded != 2 || got.Adopted != 0 {
		t.Fatalf("start %+v, want both cubes reloaded:\n%s", got, logs)
	}
	l := logs.String()
	for _, want := range []string{"it runs at xdp and the state says tc", "map=enf_peers", "it holds xdp programs, the cube now runs at tc"} {
		if !strings.Contains(l, want) {
			t.Fatalf("the log does not say %q:\n%s", want, l)
		}
	}
	if strings.Contains(l, "could not be restored") {
		t.Fatalf("a cube went down:\n%s", l)
	}
	res, err := e.RunCube("pf", 0, frame)
	if err != nil || res.Port != 1 {
		t.Fatalf("after: port %d (verdict %d), %v: the rule did not survive the move to tc", res.Port, res.Verdict, err)
	}
	p, err := ebpf.LoadPinnedProgram(filepath.Join(cfg.PinRoot, "cubes", "pf", "prog"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Type() != ebpf.SchedCLS {
		t.Fatalf("pf runs a %s program", p.Type())
	}
	panel, err := ebpf.LoadPinnedMap(filepath.Join(cfg.PinRoot, "xdp_panel"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer panel.Close()
	for name, slot := range f.Slots {
		var id uint32
		if err := panel.Lookup(slot, &id); err == nil {
			t.Errorf("the xdp panel still runs %s's old program (id %d) in slot %d", name, id, slot)
		}
	}
}

// TestDownCubeComesUpOverMapsOfAnotherLayout: a built-in cube restored
// down (its state no longer validates) over pins of an earlier release
// whose maps have another layout: the stand-in goes in over them (the map
// it shares with the cube is reset, not refused: the daemon starts), and
// the change that fixes the cube brings it up with its own map reset and
// written again from the state, where it used to stay down.
func TestDownCubeComesUpOverMapsOfAnotherLayout(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	forwarderToSink(t, e, datapath.XDP)
	frame := make([]byte, 60)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0xd, 0x02, 0, 0, 0, 0, 0xa, 0x08, 0x00})
	if res, err := e.RunCube("pf", 0, frame); err != nil || res.Port != 1 {
		t.Fatalf("before: port %d, %v", res.Port, err)
	}
	e.Close()
	dir := filepath.Join(cfg.PinRoot, "cubes", "pf")
	asOldRelease(t, filepath.Join(dir, datapath.MapStats), 8)
	asOldRelease(t, filepath.Join(dir, "pf_table"), 0)
	// the state no longer validates: a rule towards a port the cube lacks
	f, err := state.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Topology.Lookup("pf").Tables["rules"]["p1"] = json.RawMessage(`{"in_port":"p1","out_port":"p9"}`)
	f.Gen++
	if err := state.Save(cfg.StateFile, f); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	defer e.Close()
	if c, ok := e.Cube(tenant.Admin, "pf"); !ok || c.Down == "" {
		t.Fatalf("pf is not down:\n%s", logs)
	}
	if l := logs.String(); !strings.Contains(l, "map reset by the reload") || !strings.Contains(l, "map=enf_stats") {
		t.Fatalf("the stand-in's reset is not logged:\n%s", l)
	}
	if res, err := e.RunCube("pf", 0, frame); err != nil || res.Port == 1 {
		t.Fatalf("the stand-in forwarded: port %d, %v", res.Port, err)
	}
	update(t, e, func(tp *cube.Topology) error { return tp.DeleteEntry("pf", "rules", "p1") })
	if c, ok := e.Cube(tenant.Admin, "pf"); !ok || c.Down != "" {
		t.Fatalf("pf is still down:\n%s", logs)
	}
	if l := logs.String(); !strings.Contains(l, "cube is up again") || !strings.Contains(l, "map=pf_table") || !strings.Contains(l, "member raw") {
		t.Fatalf("bringing pf up does not say what it reset:\n%s", l)
	}
	if res, err := e.RunCube("pf", 0, frame); err != nil || res.Port != 1 {
		t.Fatalf("after coming up: port %d (verdict %d), %v: its rule was not written again", res.Port, res.Verdict, err)
	}
}

// TestMapsPinnedWithoutAProgram: a daemon stopped in the middle of a
// cube's first load leaves its maps pinned and no program; the next start,
// perhaps of another release, loads the cube over them by the upgrade's
// rules: a map of another layout is reset (logged), not refused, and the
// cube forwards.
func TestMapsPinnedWithoutAProgram(t *testing.T) {
	cfg := restartable(t)
	e := openAt(t, cfg)
	forwarderToSink(t, e, datapath.TC)
	e.Close()
	dir := filepath.Join(cfg.PinRoot, "cubes", "pf")
	for _, pin := range []string{"prog", "enf-digest"} {
		if err := os.Remove(filepath.Join(dir, pin)); err != nil {
			t.Fatal(err)
		}
	}
	asOldRelease(t, filepath.Join(dir, "pf_table"), 8)
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e = openAt(t, cfg)
	defer e.Close()
	if got := e.Started(); got != (engine.StartReport{Adopted: 1, MapsReset: 1}) {
		t.Fatalf("start %+v, want sink adopted and pf's table reset:\n%s", got, logs)
	}
	if l := logs.String(); !strings.Contains(l, "map reset by the reload") || !strings.Contains(l, "map=pf_table") || strings.Contains(l, "could not be restored") {
		t.Fatalf("the log does not say pf_table was reset, or pf is down:\n%s", l)
	}
	frame := make([]byte, 60)
	copy(frame, []byte{0x02, 0, 0, 0, 0, 0xd, 0x02, 0, 0, 0, 0, 0xa, 0x08, 0x00})
	if res, err := e.RunCube("pf", 0, frame); err != nil || res.Port != 1 {
		t.Fatalf("pf: port %d (verdict %d), %v", res.Port, res.Verdict, err)
	}
}
