package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// pinOldLayout replaces the map pinned at path by an empty one whose value
// is 16 octets longer, as an earlier release of another layout would have
// pinned it. The programs running over the original keep it.
func pinOldLayout(t *testing.T, path string) {
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
	old, err := ebpf.NewMap(&ebpf.MapSpec{Name: "old_release", Type: info.Type, KeySize: info.KeySize,
		ValueSize: info.ValueSize + 16, MaxEntries: info.MaxEntries, Flags: info.Flags})
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

// An upgrade to a release whose framework maps (the metadata scratch) and
// interface programs' maps (their counters) have another layout: the
// daemon starts (it used to refuse: "map spec is incompatible"), says in
// its log and metrics what it made anew, and moves every interface to the
// new programs while a paced UDP flow runs through two cubes: not a
// datagram is lost across the stop, the upgrade and the start.
func TestUpgradeOverFrameworkMapsKeepsTraffic(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t)
	_, a, b, ra, rb := twoHosts(t)
	d.cli("cube", "add", "front", "portfwd")
	d.cli("cube", "add", "back", "portfwd")
	d.cli("port", "add", "front", "p0", "--peer", ra)
	d.cli("port", "add", "back", "p0")
	d.cli("port", "add", "front", "p1", "--peer", "back:p0")
	d.cli("port", "add", "back", "p1", "--peer", rb)
	for _, c := range []string{"front", "back"} {
		d.cli("table", "add", c, "rules", "in_port=p0", "out_port=p1")
		d.cli("table", "add", c, "rules", "in_port=p1", "out_port=p0")
	}
	if got := sendUDP(t, a, b, "198.18.0.2", 8111, 200, 100); got != 200 {
		t.Fatalf("%d of 200 before the upgrade", got)
	}
	d.stop()
	pinOldLayout(t, filepath.Join(d.bpffs, "scratch"))
	pinOldLayout(t, filepath.Join(d.bpffs, "ifprogs", "xdp_ingress", "enf_if_stats"))

	type result struct{ sent, received int }
	done := make(chan result, 1)
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	go func() {
		s, r, err := netlab.UDPFlow(c, a, b, "198.18.0.2", 8112, 1500, 64, 250)
		if err != nil {
			t.Errorf("flow: %v", err)
		}
		done <- result{s, r}
	}()
	time.Sleep(200 * time.Millisecond) // the flow runs before the start, and through it
	d.start()
	waitFor(t, "the daemon to be ready", func() bool { return strings.Contains(d.log.String(), "edgenfd ready") })
	l := d.log.String()
	for _, want := range []string{"framework map renewed", "map=scratch", "interface program's map reset", "map=enf_if_stats",
		"reloaded in place", "it runs over the framework map"} {
		if !strings.Contains(l, want) {
			t.Fatalf("the log does not say %q:\n%s", want, l)
		}
	}
	if n := d.metric(t, "edgenf_start_shared_maps_reset"); n != 11 {
		t.Fatalf("edgenf_start_shared_maps_reset = %v, want 11 (10 framework maps, 1 interface map)", n)
	}
	if n := d.metric(t, `edgenf_start_cubes{how="reloaded"}`); n != 2 {
		t.Fatalf(`edgenf_start_cubes{how="reloaded"} = %v, want 2`, n)
	}
	r := <-done
	if r.sent != 1500 || r.received != r.sent {
		t.Fatalf("%d of %d datagrams sent through the upgrade arrived", r.received, r.sent)
	}
	ents, _ := os.ReadDir(d.bpffs)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-old") {
			t.Errorf("the earlier release's map %s is still pinned after the start", e.Name())
		}
	}
	if out := d.cli("table", "list", "front", "rules"); strings.Count(out, "p1") != 2 {
		t.Fatalf("front's rules after the upgrade:\n%s", out)
	}
}
