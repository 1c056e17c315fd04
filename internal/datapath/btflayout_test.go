package datapath

import (
	"testing"

	"github.com/cilium/ebpf/btf"
)

// typeChange compares shapes: through typedefs and qualifiers, nested
// structs, bitfields, integer encodings, array lengths, enum values; names
// of types never, names of members always. The first difference in memory
// order is the one reported, with the member's path.
func TestTypeChange(t *testing.T) {
	u8 := &btf.Int{Name: "__u8", Size: 1}
	u16 := &btf.Int{Name: "__u16", Size: 2}
	u32 := &btf.Int{Name: "__u32", Size: 4}
	s32 := &btf.Int{Name: "__s32", Size: 4, Encoding: btf.Signed}
	inner := func(x, y btf.Bits) *btf.Struct {
		return &btf.Struct{Name: "far", Size: 4, Members: []btf.Member{{Name: "x", Type: u16, Offset: x}, {Name: "y", Type: u16, Offset: y}}}
	}
	outer := func(a btf.Type, in *btf.Struct, n uint32) *btf.Struct {
		return &btf.Struct{Name: "rule", Size: 8 + n, Members: []btf.Member{
			{Name: "a", Type: a},
			{Name: "in", Type: in, Offset: 32},
			{Name: "b", Type: &btf.Array{Type: u8, Index: u32, Nelems: n}, Offset: 64},
		}}
	}
	bitfield := func(off, size btf.Bits) *btf.Struct {
		return &btf.Struct{Name: "bf", Size: 4, Members: []btf.Member{{Name: "f", Type: u32, Offset: off, BitfieldSize: size}}}
	}
	enum := func(v uint64) *btf.Enum {
		return &btf.Enum{Name: "kind", Size: 4, Values: []btf.EnumValue{{Name: "K_A", Value: 0}, {Name: "K_B", Value: v}}}
	}
	var deep btf.Type = u8
	for i := 0; i < maxLayoutDepth+2; i++ {
		deep = &btf.Array{Type: deep, Index: u32, Nelems: 1}
	}
	for _, tc := range []struct {
		name     string
		old, new btf.Type
		want     string
	}{
		{"identical", outer(u32, inner(0, 16), 4), outer(u32, inner(0, 16), 4), ""},
		{"typedef and qualifiers", outer(u32, inner(0, 16), 4),
			outer(&btf.Const{Type: &btf.Volatile{Type: &btf.Typedef{Name: "ue_t", Type: u32}}}, inner(0, 16), 4), ""},
		{"renamed top struct", inner(0, 16), &btf.Typedef{Name: "far_t", Type: &btf.Struct{Name: "far2", Size: 4, Members: inner(0, 16).Members}}, ""},
		{"nested member moved", outer(u32, inner(0, 16), 4), outer(u32, inner(16, 0), 4), "member in.x moved from offset 0 to 2"},
		{"int encoding", outer(u32, inner(0, 16), 4), outer(s32, inner(0, 16), 4), "member a changed from 4-octet unsigned int to 4-octet signed int"},
		{"array length", outer(u32, inner(0, 16), 4), outer(u32, inner(0, 16), 8), "member b changed from 4 to 8 elements"},
		{"kind", u32, inner(0, 16), "changed from int to struct"},
		{"bitfield width", bitfield(3, 3), bitfield(3, 4), "member f changed from a 3-bit to a 4-bit field"},
		{"bitfield moved", bitfield(3, 3), bitfield(4, 3), "member f moved from offset bit 3 to bit 4"},
		{"enum value", enum(1), enum(2), "enum value K_B changed from 1 to 2"},
		{"member removed", inner(0, 16), &btf.Struct{Name: "far", Size: 4, Members: inner(0, 16).Members[:1]}, "member y removed"},
		{"too deep", deep, deep, "nested deeper than 16 levels: not compared"},
	} {
		if got := typeChange(tc.old, tc.new, "", 0); !contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// contains: want "" only matches "", otherwise the end of got must be want
// (a path prefix may precede it).
func contains(got, want string) bool {
	if want == "" || got == "" {
		return got == want
	}
	return len(got) >= len(want) && got[len(got)-len(want):] == want
}
