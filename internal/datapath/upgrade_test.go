package datapath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
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
	dp, root := openRenewable(t)
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
	c2, up, err := dp.UpgradeCube("x", datapath.XDP, 3, grown)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if resets := up.Reset; len(resets) != 1 || resets[0].Map != "pf_table" || !strings.Contains(resets[0].Reason, "MaxEntries: 64 changed to 128") {
		t.Fatalf("resets %v", resets)
	}
	if len(up.Uncompared) != 0 {
		t.Fatalf("maps of an object with BTF kept uncompared: %v", up.Uncompared)
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

// withEntry returns portfwd's spec with pf_table's value type given by f
// (applied to a copy of struct pf_entry).
func withEntry(t *testing.T, f func(*btf.Struct) btf.Type) *ebpf.CollectionSpec {
	t.Helper()
	spec := portfwdSpec(t).Copy()
	ms := spec.Maps["pf_table"]
	st, ok := ms.Value.(*btf.Struct)
	if !ok {
		t.Fatalf("pf_table's value is a %T", ms.Value)
	}
	st = btf.Copy(st).(*btf.Struct)
	ms.Value = f(st)
	return spec
}

// upgradeTable pins portfwd's cube with one pf_table entry, upgrades it to
// spec and returns what the upgrade did and the entry's first octet after it.
func upgradeTable(t *testing.T, spec *ebpf.CollectionSpec) (datapath.Upgraded, byte) {
	t.Helper()
	return upgradeTableFrom(t, portfwdSpec(t), spec)
}

// upgradeTableFrom is upgradeTable from a cube first loaded from first.
func upgradeTableFrom(t *testing.T, first, spec *ebpf.CollectionSpec) (datapath.Upgraded, byte) {
	t.Helper()
	dp, _ := openRenewable(t)
	c, err := dp.LoadCube("x", datapath.XDP, 3, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	table, _ := c.Map("pf_table")
	entry := make([]byte, table.ValueSize())
	entry[0] = 5
	if err := table.Put(uint32(1), entry); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2, up, err := dp.UpgradeCube("x", datapath.XDP, 3, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	table, _ = c2.Map("pf_table")
	if err := table.Lookup(uint32(1), entry); err != nil {
		t.Fatal(err)
	}
	return up, entry[0]
}

// A value struct whose members moved keeps its size, type and flags: the
// kernel's record of the map's BTF shows the move, and the map is reset
// with a reason naming the member and both offsets.
func TestUpgradeResetsAMapWhoseValueMembersMoved(t *testing.T) {
	swapped := withEntry(t, func(st *btf.Struct) btf.Type {
		var flags, action int = -1, -1
		for i, m := range st.Members {
			switch m.Name {
			case "flags":
				flags = i
			case "action":
				action = i
			}
		}
		if flags < 0 || action < 0 {
			t.Fatalf("struct pf_entry has no flags and action: %v", st.Members)
		}
		// same size and type, places exchanged
		st.Members[flags].Offset, st.Members[action].Offset = st.Members[action].Offset, st.Members[flags].Offset
		st.Members[flags], st.Members[action] = st.Members[action], st.Members[flags]
		return st
	})
	up, got := upgradeTable(t, swapped)
	want := "value struct pf_entry: member action moved from offset 6 to 4"
	if len(up.Reset) != 1 || up.Reset[0].Map != "pf_table" || up.Reset[0].Reason != want {
		t.Fatalf("resets %v, want pf_table (%s)", up.Reset, want)
	}
	if got != 0 {
		t.Fatal("the reset table kept the old entry")
	}
}

// The same layout keeps the contents, and so does the same shape under
// another top name (a typedef renamed, a struct renamed): the program reads
// bytes, not names. A member renamed in place is a change.
func TestUpgradeKeepsAMapOfTheSameShape(t *testing.T) {
	for _, tc := range []struct {
		name   string
		value  func(*btf.Struct) btf.Type
		reason string
	}{
		{"identical", func(st *btf.Struct) btf.Type { return st }, ""},
		{"typedef", func(st *btf.Struct) btf.Type { return &btf.Typedef{Name: "pf_entry_t", Type: st} }, ""},
		{"renamed struct", func(st *btf.Struct) btf.Type { st.Name = "pf_entry_v2"; return st }, ""},
		{"renamed member", func(st *btf.Struct) btf.Type {
			for i := range st.Members {
				if st.Members[i].Name == "flags" {
					st.Members[i].Name = "mode"
				}
			}
			return st
		}, "value struct pf_entry: member flags replaced by mode at offset 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, got := upgradeTable(t, withEntry(t, tc.value))
			if len(up.Uncompared) != 0 {
				t.Fatalf("uncompared %v", up.Uncompared)
			}
			if tc.reason == "" {
				if len(up.Reset) != 0 || got != 5 {
					t.Fatalf("a map of the same shape was reset: %v, entry %d", up.Reset, got)
				}
				return
			}
			if len(up.Reset) != 1 || up.Reset[0].Reason != tc.reason || got != 0 {
				t.Fatalf("resets %v (entry %d), want pf_table (%s)", up.Reset, got, tc.reason)
			}
		})
	}
}

// A map created without BTF, or an object declaring one without types,
// cannot be compared: the map is kept on its sizes as before, and the
// upgrade says so.
func TestUpgradeKeepsAMapWithoutBTFAndSaysSo(t *testing.T) {
	untyped := func() *ebpf.CollectionSpec {
		spec := portfwdSpec(t).Copy()
		spec.Maps["pf_table"].Key, spec.Maps["pf_table"].Value = nil, nil
		return spec
	}
	for _, tc := range []struct {
		name        string
		first, next *ebpf.CollectionSpec
		why         string
	}{
		{"pinned without BTF", untyped(), portfwdSpec(t), "map created without BTF"},
		{"new object without types", portfwdSpec(t), untyped(), "the new object declares the map without key and value types"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, got := upgradeTableFrom(t, tc.first, tc.next)
			if len(up.Reset) != 0 || got != 5 {
				t.Fatalf("resets %v, entry %d", up.Reset, got)
			}
			if len(up.Uncompared) != 1 || up.Uncompared[0].Map != "pf_table" || !strings.Contains(up.Uncompared[0].Reason, "could not be compared") || !strings.Contains(up.Uncompared[0].Reason, tc.why) {
				t.Fatalf("uncompared %v", up.Uncompared)
			}
		})
	}
}
