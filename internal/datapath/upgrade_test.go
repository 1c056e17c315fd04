package datapath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/testenv"
)

func portfwdSpec(t *testing.T) *ebpf.CollectionSpec {
	t.Helper()
	b, err := portfwd.Type.Object(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := datapath.LoadSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func pins(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// An upgrade reloads a cube pinned from another object: maps of the same
// layout keep their contents, a map whose layout changed is reported and
// starts empty, and a new program the kernel refuses changes nothing (the
// old program's maps keep their pins and contents). Every load clears the
// recorded digest until the caller records the new one.
func TestUpgradeCubeKeepsSameLayoutMapsAndResetsTheOthers(t *testing.T) {
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfu-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Destroy()
	dir := filepath.Join(root, "cubes", "x")
	c, err := dp.LoadCube("x", datapath.XDP, 3, portfwdSpec(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := dp.PinnedDigest("x"); ok || err != nil {
		t.Fatalf("a digest before any was recorded: %v %v", ok, err)
	}
	d1 := datapath.Digest{1, 2, 3}
	if err := c.SetDigest(d1); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := dp.PinnedDigest("x"); !ok || err != nil || got != d1 {
		t.Fatalf("digest %x %v %v", got, ok, err)
	}
	hop := datapath.Hop{Kind: datapath.DstIface, Ifindex: 7}
	if err := c.SetHop(2, hop); err != nil {
		t.Fatal(err)
	}
	table, _ := c.Map("pf_table")
	entry := make([]byte, table.ValueSize())
	entry[0] = 5
	if err := table.Put(uint32(1), entry); err != nil {
		t.Fatal(err)
	}
	c.Close()

	// refused by the verifier: nothing changes but the digest
	broken := portfwdSpec(t).Copy()
	broken.Maps["pf_table"].MaxEntries *= 2
	broken.Programs[datapath.ProgName].Instructions = asm.Instructions{asm.Return()}
	if _, _, err := dp.UpgradeCube("x", datapath.XDP, 3, broken); err == nil {
		t.Fatal("a program that does not verify was loaded")
	}
	if got := pins(t, dir); !strings.Contains(got, "pf_table") || strings.Contains(got, "aside") {
		t.Fatalf("a failed upgrade left the pins as %q", got)
	}
	if m, err := ebpf.LoadPinnedMap(filepath.Join(dir, "pf_table"), nil); err != nil {
		t.Fatal(err)
	} else {
		err := m.Lookup(uint32(1), entry)
		m.Close()
		if err != nil || entry[0] != 5 {
			t.Fatalf("a failed upgrade lost the table's contents: %v %v", entry[0], err)
		}
	}
	if _, ok, _ := dp.PinnedDigest("x"); ok {
		t.Fatal("the digest survived a load that changed the program's fate")
	}

	// the table's layout changed: reset; ports and counters kept
	grown := portfwdSpec(t).Copy()
	grown.Maps["pf_table"].MaxEntries *= 2
	c2, resets, err := dp.UpgradeCube("x", datapath.XDP, 3, grown)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if len(resets) != 1 || resets[0].Map != "pf_table" || !strings.Contains(resets[0].Reason, "MaxEntries: 64 changed to 128") {
		t.Fatalf("resets %v", resets)
	}
	ports, _ := c2.Map(datapath.MapPorts)
	var got datapath.Hop
	if err := ports.Lookup(uint32(2), &got); err != nil || got != hop {
		t.Fatalf("port map lost across the upgrade: %+v %v", got, err)
	}
	table, _ = c2.Map("pf_table")
	if err := table.Lookup(uint32(1), entry); err != nil || entry[0] != 0 || table.MaxEntries() != 128 {
		t.Fatalf("the reset table is not the new, empty one: %v %v max %d", entry[0], err, table.MaxEntries())
	}
	if got := pins(t, dir); strings.Contains(got, "aside") {
		t.Fatalf("upgrade left %q", got)
	}
}
