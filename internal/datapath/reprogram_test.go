package datapath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/monitor"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/testenv"
)

// A cube given another program keeps the maps both programs share (ports,
// counters) with their contents and unpins the ones the new one lacks.
func TestReprogramKeepsSharedMapsAndDropsTheRest(t *testing.T) {
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfr-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Destroy()
	load := func(obj func(datapath.Hook) ([]byte, error), opts datapath.LoadOptions) (*datapath.Program, error) {
		b, _ := obj(datapath.XDP)
		spec, err := datapath.LoadSpec(b)
		if err != nil {
			t.Fatal(err)
		}
		return dp.ReloadCube("x", datapath.XDP, 3, spec, opts)
	}
	c, err := load(portfwd.Type.Object, datapath.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hop := datapath.Hop{Kind: datapath.DstIface, Ifindex: 7}
	if err := c.SetHop(2, hop); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Map("pf_table"); err != nil {
		t.Fatal(err)
	}
	c.Close()

	c2, err := load(monitor.Type.Object, datapath.LoadOptions{Reprogram: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ports, _ := c2.Map(datapath.MapPorts)
	var got datapath.Hop
	if err := ports.Lookup(uint32(2), &got); err != nil || got != hop {
		t.Fatalf("port map lost across reprogramming: %+v %v", got, err)
	}
	if _, err := c2.Map("mon_counts"); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "cubes", "x"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Contains(strings.Join(names, " "), "pf_table") {
		t.Fatalf("the old program's table is still pinned: %v", names)
	}
}

// /sys/fs/bpf is writable by all (sticky) on many systems: a local user who
// makes the daemon's pin root first could rename pinned maps from one cube
// to another. Open refuses such a directory, and pins nothing in it.
func TestOpenRefusesAPinRootAnotherUserMade(t *testing.T) {
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfr-%d-%d", os.Getpid(), seq.Add(1)))
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chown(root, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	dp, err := datapath.Open(root)
	if err == nil {
		dp.Destroy()
		t.Fatal("opened a pin root owned by uid 65534")
	}
	if !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("error does not say why: %v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("pinned into it anyway: %v", ents)
	}
}
