// Package btflayout checks that a Go type mirrors a C struct byte for byte,
// reading the C side from the BTF of a built eBPF object (in the style of
// Cilium's alignchecker). The daemon writes and reads map entries through
// such mirrors: a field added, moved or resized on one side only would
// shift every field after it, and the fast path would read garbage without
// an error anywhere.
//
// Two layouts match when they have the same size and the same fields at the
// same offsets, each of the same size and shape (nested structs and arrays
// compared in turn), with the same names: Go's CamelCase name, lowercased,
// is the C name without underscores (InPort ↔ in_port), or the field's
// `btf:"name"` tag gives the C name. A Go embedded struct mirrors a C struct
// member of its size, whatever its name, or the C members laid out flat in
// its place. Padding is not a field: Go's blank (_)
// fields, and C members named pad... or _pad.... A Go byte array stands for
// any C member of its size (addresses and ports kept in network order), and
// a Go type that is not a struct mirrors the C struct as a whole (sizes
// only), as any Go type mirrors a C struct that is one byte array (a blob
// the fast path keeps for the daemon without reading it).
//
// A struct the object does not use in a map or a function reaches its BTF
// through EDGENF_ABI (bpf/include/edgenf/types.h).
package btflayout

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Check compares each Go type of mirrors (a value or a pointer to one) with
// the C struct or union its key names in the BTF of obj, and returns every
// difference.
func Check(obj []byte, mirrors map[string]any) error {
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		return fmt.Errorf("object's BTF: %w", err)
	}
	names := make([]string, 0, len(mirrors))
	for n := range mirrors {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		c, err := lookup(spec, n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		g := reflect.TypeOf(mirrors[n])
		for g.Kind() == reflect.Pointer {
			g = g.Elem()
		}
		var diffs []string
		compare(c, g, "", &diffs)
		for _, d := range diffs {
			errs = append(errs, fmt.Errorf("%s (Go %s): %s", n, g, d))
		}
	}
	return errors.Join(errs...)
}

func lookup(spec *btf.Spec, name string) (btf.Type, error) {
	var s *btf.Struct
	if err := spec.TypeByName(name, &s); err == nil {
		return s, nil
	}
	var u *btf.Union
	if err := spec.TypeByName(name, &u); err == nil {
		return u, nil
	}
	return nil, fmt.Errorf("struct %s is not in the object's BTF (use it in a map, or declare it with EDGENF_ABI)", name)
}

// field is a named member of either side at a byte offset.
type field struct {
	name   string
	offset uint32
	c      btf.Type
	g      reflect.Type
	tag    string // Go: the C name it mirrors, if given
	// embedded: a Go anonymous struct field, which mirrors either a C
	// struct member of its size (whatever its name) or, flattened, the C
	// members in its place
	embedded bool
}

func compare(c btf.Type, g reflect.Type, path string, diffs *[]string) {
	c = btf.UnderlyingType(c)
	at := func(format string, args ...any) {
		where := path
		if where == "" {
			where = "the struct"
		}
		*diffs = append(*diffs, where+": "+fmt.Sprintf(format, args...))
	}
	cs, err := btf.Sizeof(c)
	if err != nil {
		at("%v", err)
		return
	}
	if uintptr(cs) != g.Size() {
		at("C is %d bytes, Go %d", cs, g.Size())
		return
	}
	isBytes := g.Kind() == reflect.Array && g.Elem().Kind() == reflect.Uint8
	switch ct := c.(type) {
	case *btf.Struct:
		if g.Kind() != reflect.Struct || opaque(ct) {
			return // the whole struct as one value (same size)
		}
		compareFields(ct.Members, g, path, diffs)
	case *btf.Union:
		// a Go type of the union's size stands for it
	case *btf.Array:
		switch {
		case isBytes:
		case g.Kind() != reflect.Array:
			at("C is an array, Go a %s", g.Kind())
		case int(ct.Nelems) != g.Len():
			at("C has %d elements, Go %d", ct.Nelems, g.Len())
		default:
			compare(ct.Type, g.Elem(), path+"[]", diffs)
		}
	case *btf.Int, *btf.Enum, *btf.Pointer:
		switch g.Kind() {
		case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			if !isBytes {
				at("C is a %s, Go a %s", c, g.Kind())
			}
		}
	default:
		at("C type %s is not comparable", c)
	}
}

// opaque reports whether a C struct is one byte array: a blob the fast path
// keeps and never reads (the daemon's own record), which any Go type of its
// size mirrors.
func opaque(s *btf.Struct) bool {
	if len(s.Members) != 1 {
		return false
	}
	a, ok := btf.UnderlyingType(s.Members[0].Type).(*btf.Array)
	if !ok {
		return false
	}
	i, ok := btf.UnderlyingType(a.Type).(*btf.Int)
	return ok && i.Size == 1
}

func isPad(name string) bool {
	n := strings.TrimLeft(strings.ToLower(name), "_")
	return name == "" || name == "_" || strings.HasPrefix(n, "pad")
}

func compareFields(members []btf.Member, g reflect.Type, path string, diffs *[]string) {
	var cf, gf []field
	for _, m := range members {
		if m.BitfieldSize != 0 {
			*diffs = append(*diffs, fmt.Sprintf("%s%s: a bitfield, which a Go mirror cannot express", prefix(path), m.Name))
			continue
		}
		// anonymous members (unions, structs) are kept: their offset
		// and size still count
		if m.Name != "" && isPad(m.Name) {
			continue
		}
		cf = append(cf, field{name: m.Name, offset: m.Offset.Bytes(), c: m.Type})
	}
	for i := 0; i < g.NumField(); i++ {
		f := g.Field(i)
		if f.Name == "_" || isPad(f.Name) {
			continue
		}
		gf = append(gf, field{name: f.Name, offset: uint32(f.Offset), g: f.Type, tag: f.Tag.Get("btf"),
			embedded: f.Anonymous && f.Type.Kind() == reflect.Struct})
	}
	i, j := 0, 0
	for i < len(cf) || j < len(gf) {
		switch {
		case j == len(gf) || i < len(cf) && cf[i].offset < gf[j].offset:
			*diffs = append(*diffs, fmt.Sprintf("%s%s at offset %d: only in C", prefix(path), cf[i].name, cf[i].offset))
			i++
		case i == len(cf) || gf[j].offset < cf[i].offset:
			*diffs = append(*diffs, fmt.Sprintf("%s%s at offset %d: only in Go", prefix(path), gf[j].name, gf[j].offset))
			j++
		case gf[j].embedded && !sameSize(cf[i].c, gf[j].g):
			// C lays the embedded struct's fields out flat
			gf = append(append(gf[:j:j], embeddedFields(gf[j])...), gf[j+1:]...)
		default:
			c, g := cf[i], gf[j]
			name := c.name
			if name == "" {
				name = "(anonymous)"
			}
			if c.name != "" && !g.embedded && !sameName(c.name, g) {
				*diffs = append(*diffs, fmt.Sprintf("%s%s at offset %d: Go calls it %s", prefix(path), c.name, c.offset, g.name))
			}
			compare(c.c, g.g, prefix(path)+name, diffs)
			i++
			j++
		}
	}
}

func sameSize(c btf.Type, g reflect.Type) bool {
	n, err := btf.Sizeof(c)
	return err == nil && uintptr(n) == g.Size()
}

// embeddedFields are the fields of an embedded struct at their offsets in
// the outer one.
func embeddedFields(e field) []field {
	var out []field
	for i := 0; i < e.g.NumField(); i++ {
		f := e.g.Field(i)
		if f.Name == "_" || isPad(f.Name) {
			continue
		}
		out = append(out, field{name: f.Name, offset: e.offset + uint32(f.Offset), g: f.Type, tag: f.Tag.Get("btf"),
			embedded: f.Anonymous && f.Type.Kind() == reflect.Struct})
	}
	return out
}

func sameName(c string, g field) bool {
	if g.tag != "" {
		return g.tag == c
	}
	return strings.ReplaceAll(strings.ToLower(c), "_", "") == strings.ToLower(g.name)
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + "."
}
