package datapath

// Layouts: a pinned map is kept across an upgrade only if the new program
// reads its entries as the old one wrote them. Type, sizes, max entries and
// flags being equal is not enough: a value struct whose fields moved keeps
// its size. A map created with BTF records its key and value types in the
// kernel; they are compared structurally with the new object's.
//
// Structural: sizes, member names, offsets and bitfield widths, integer
// encodings, array lengths and enum values, through typedefs and
// qualifiers. Names of types (the top ones included) are not compared: the
// bytes are what the program reads, so a typedef renamed, or a struct
// renamed with the same members, keeps the contents. Member names are
// compared: a member renamed in place most likely holds something else.

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// maxLayoutDepth bounds the comparison's recursion (nested structs and
// arrays); a layout deeper than that is not kept.
const maxLayoutDepth = 16

// errNoLayout: the kernel cannot say what types the map was created with;
// errNoNewType: the new object declares none.
var (
	errNoLayout  = errors.New("the layout could not be compared (map created without BTF, or the kernel does not report it)")
	errNoNewType = errors.New("the layout could not be compared (the new object declares the map without key and value types)")
)

// mapInfoBTF is struct bpf_map_info of the kernel's uapi, up to
// btf_value_type_id: the fields cilium/ebpf's MapInfo does not expose.
type mapInfoBTF struct {
	Type                  uint32
	ID                    uint32
	KeySize               uint32
	ValueSize             uint32
	MaxEntries            uint32
	MapFlags              uint32
	Name                  [unix.BPF_OBJ_NAME_LEN]byte
	Ifindex               uint32
	BTFVmlinuxValueTypeID uint32
	NetnsDev              uint64
	NetnsIno              uint64
	BTFID                 uint32
	BTFKeyTypeID          uint32
	BTFValueTypeID        uint32
}

// objGetInfo is the bpf_attr of BPF_OBJ_GET_INFO_BY_FD.
type objGetInfo struct {
	fd      uint32
	infoLen uint32
	info    uint64
}

// pinnedLayout returns the key and value types m was created with, or
// errNoLayout. The key type is nil for a map given only a value type.
func pinnedLayout(m *ebpf.Map) (key, value btf.Type, err error) {
	var info mapInfoBTF
	attr := objGetInfo{fd: uint32(m.FD()), infoLen: uint32(unsafe.Sizeof(info)), info: uint64(uintptr(unsafe.Pointer(&info)))}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET_INFO_BY_FD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(m)
	runtime.KeepAlive(&info)
	if errno != 0 {
		return nil, nil, fmt.Errorf("map info: %w", errno)
	}
	// A kernel older than the BTF fields copies fewer octets: they stay 0.
	if attr.infoLen < uint32(unsafe.Offsetof(info.BTFValueTypeID)+4) || info.BTFID == 0 || info.BTFValueTypeID == 0 {
		return nil, nil, errNoLayout
	}
	h, err := btf.NewHandleFromID(btf.ID(info.BTFID))
	if err != nil {
		return nil, nil, fmt.Errorf("map BTF %d: %w", info.BTFID, err)
	}
	defer h.Close()
	spec, err := h.Spec(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("map BTF %d: %w", info.BTFID, err)
	}
	if info.BTFKeyTypeID != 0 {
		if key, err = spec.TypeByID(btf.TypeID(info.BTFKeyTypeID)); err != nil {
			return nil, nil, fmt.Errorf("map BTF %d key: %w", info.BTFID, err)
		}
	}
	if value, err = spec.TypeByID(btf.TypeID(info.BTFValueTypeID)); err != nil {
		return nil, nil, fmt.Errorf("map BTF %d value: %w", info.BTFID, err)
	}
	return key, value, nil
}

// layoutChange compares the key and value types m was created with to ms's.
// It returns "" when they are the same shape, what changed otherwise, and
// errNoLayout or errNoNewType when a side has no types to compare.
func layoutChange(ms *ebpf.MapSpec, m *ebpf.Map) (string, error) {
	if refersToObjects(ms.Type) {
		return "", nil
	}
	if !hasType(ms.Value) {
		return "", errNoNewType
	}
	oldKey, oldValue, err := pinnedLayout(m)
	if err != nil {
		return "", err
	}
	if oldKey != nil && hasType(ms.Key) {
		if d := typeChange(oldKey, ms.Key, "", 0); d != "" {
			return "key " + typeName(ms.Key, oldKey) + ": " + d, nil
		}
	}
	if d := typeChange(oldValue, ms.Value, "", 0); d != "" {
		return "value " + typeName(ms.Value, oldValue) + ": " + d, nil
	}
	return "", nil
}

// refersToObjects: map types whose values are kernel objects (programs,
// maps, rings, devices, sockets), created without a value type. Their
// layout is their sizes, which ebpf.MapSpec.Compatible compares (a map of
// maps' inner map: innerCompatible).
func refersToObjects(t ebpf.MapType) bool {
	switch t {
	case ebpf.PerfEventArray, ebpf.ProgramArray, ebpf.ArrayOfMaps, ebpf.HashOfMaps, ebpf.RingBuf,
		ebpf.DevMap, ebpf.DevMapHash, ebpf.CPUMap, ebpf.XSKMap, ebpf.SockMap, ebpf.SockHash, ebpf.StackTrace:
		return true
	}
	return false
}

// hasType: a spec's key or value type that says something (a map of a
// legacy definition has none, or Void).
func hasType(t btf.Type) bool {
	if t == nil {
		return false
	}
	_, void := t.(*btf.Void)
	return !void
}

// typeName names the new top type as C writes it, and the old one's too
// when it was named otherwise.
func typeName(nu, old btf.Type) string {
	n := cName(nu)
	if o := cName(old); o != n {
		n += " (was " + o + ")"
	}
	return n
}

func cName(t btf.Type) string {
	switch t := t.(type) {
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	}
	if t.TypeName() == "" {
		return "(anonymous " + kindName(t) + ")"
	}
	return t.TypeName()
}

// kindName is what kind of type t is, for a message.
func kindName(t btf.Type) string {
	switch t.(type) {
	case *btf.Int:
		return "int"
	case *btf.Struct:
		return "struct"
	case *btf.Union:
		return "union"
	case *btf.Array:
		return "array"
	case *btf.Enum:
		return "enum"
	case *btf.Pointer:
		return "pointer"
	case *btf.Float:
		return "float"
	}
	return fmt.Sprintf("%T", t)
}

// typeChange says how nu differs in shape from old, "" if it does not. at
// is the member path the types are found at ("" for the top one).
func typeChange(old, nu btf.Type, at string, depth int) string {
	where := func(s string) string {
		if at == "" {
			return s
		}
		return "member " + at + " " + s
	}
	if depth > maxLayoutDepth {
		return where(fmt.Sprintf("nested deeper than %d levels: not compared", maxLayoutDepth))
	}
	old, nu = btf.UnderlyingType(old), btf.UnderlyingType(nu)
	if kindName(old) != kindName(nu) {
		return where(fmt.Sprintf("changed from %s to %s", kindName(old), kindName(nu)))
	}
	switch o := old.(type) {
	case *btf.Int:
		n := nu.(*btf.Int)
		if o.Size != n.Size || o.Encoding != n.Encoding {
			return where(fmt.Sprintf("changed from %s to %s", intShape(o), intShape(n)))
		}
	case *btf.Float:
		if n := nu.(*btf.Float); o.Size != n.Size {
			return where(fmt.Sprintf("changed from %d to %d octets", o.Size, n.Size))
		}
	case *btf.Enum:
		return enumChange(o, nu.(*btf.Enum), where)
	case *btf.Array:
		n := nu.(*btf.Array)
		if o.Nelems != n.Nelems {
			return where(fmt.Sprintf("changed from %d to %d elements", o.Nelems, n.Nelems))
		}
		return typeChange(o.Type, n.Type, at+"[]", depth+1)
	case *btf.Struct:
		n := nu.(*btf.Struct)
		return membersChange(o.Size, n.Size, o.Members, n.Members, at, depth, where)
	case *btf.Union:
		n := nu.(*btf.Union)
		return membersChange(o.Size, n.Size, o.Members, n.Members, at, depth, where)
	case *btf.Pointer:
		// a pointer's bytes are an address either way; what it points to
		// is not in the map
	default:
		// Fwd, Void and the like: the same kind is the same shape
	}
	return ""
}

func intShape(i *btf.Int) string {
	s := fmt.Sprintf("%d-octet", i.Size)
	switch i.Encoding {
	case btf.Signed:
		s += " signed"
	case btf.Char:
		s += " char"
	case btf.Bool:
		s += " bool"
	default:
		s += " unsigned"
	}
	return s + " int"
}

func enumChange(o, n *btf.Enum, where func(string) string) string {
	if o.Size != n.Size || o.Signed != n.Signed {
		return where(fmt.Sprintf("changed from a %d-octet to a %d-octet enum, or its signedness", o.Size, n.Size))
	}
	vals := make(map[string]uint64, len(o.Values))
	for _, v := range o.Values {
		vals[v.Name] = v.Value
	}
	for _, v := range n.Values {
		if was, ok := vals[v.Name]; ok && was != v.Value {
			return where(fmt.Sprintf("enum value %s changed from %d to %d", v.Name, was, v.Value))
		}
	}
	return ""
}

// membersChange compares a struct's or union's members, matched by name
// (unnamed ones by their rank among the unnamed).
func membersChange(oSize, nSize uint32, om, nm []btf.Member, at string, depth int, where func(string) string) string {
	prefix := at
	if prefix != "" {
		prefix += "."
	}
	key := func(ms []btf.Member) map[string]btf.Member {
		out := make(map[string]btf.Member, len(ms))
		anon := 0
		for _, m := range ms {
			k := m.Name
			if k == "" {
				k = fmt.Sprintf("(unnamed %d)", anon)
				anon++
			}
			out[k] = m
		}
		return out
	}
	olds, nus := key(om), key(nm)
	for _, m := range nm {
		if m.Name == "" {
			continue
		}
		if _, ok := olds[m.Name]; ok {
			continue
		}
		// a member of the old layout at the same place, gone from the new
		for _, o := range om {
			if _, kept := nus[o.Name]; o.Name != "" && !kept && o.Offset == m.Offset {
				return fmt.Sprintf("member %s%s replaced by %s at offset %s", prefix, o.Name, m.Name, bits(m.Offset))
			}
		}
		return "member " + prefix + m.Name + " added"
	}
	for _, m := range om {
		if _, ok := nus[m.Name]; m.Name != "" && !ok {
			return "member " + prefix + m.Name + " removed"
		}
	}
	if len(om) != len(nm) {
		return where(fmt.Sprintf("changed from %d to %d members", len(om), len(nm)))
	}
	// in the new order, so that the first change reported is the first
	// in memory
	anon := 0
	for _, n := range nm {
		k := n.Name
		if k == "" {
			k = fmt.Sprintf("(unnamed %d)", anon)
			anon++
		}
		o := olds[k]
		if o.Offset != n.Offset {
			return fmt.Sprintf("member %s%s moved from offset %s to %s", prefix, k, bits(o.Offset), bits(n.Offset))
		}
		if o.BitfieldSize != n.BitfieldSize {
			return fmt.Sprintf("member %s%s changed from a %d-bit to a %d-bit field", prefix, k, o.BitfieldSize, n.BitfieldSize)
		}
		if d := typeChange(o.Type, n.Type, prefix+k, depth+1); d != "" {
			return d
		}
	}
	if oSize != nSize {
		return where(fmt.Sprintf("changed from %d to %d octets", oSize, nSize))
	}
	return ""
}

// bits writes an offset in octets, or in bits when it is not a whole number
// of octets.
func bits(b btf.Bits) string {
	if b%8 == 0 {
		return fmt.Sprint(uint32(b) / 8)
	}
	return fmt.Sprintf("bit %d", uint32(b))
}
