package p4rt

// Our P4Info model (internal/p4/p4info) encoded as p4.config.v1.P4Info
// (p4lang/p4runtime v1.4 proto/p4/config/v1/p4info.proto, p4types.proto),
// and the preambles of a client's P4Info read back to check it against the
// compiled program.

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"google.golang.org/protobuf/encoding/protowire"
)

// p4.config.v1 field numbers.
const (
	// P4Info
	fInfoPkg, fInfoTables, fInfoActions, fInfoCounters, fInfoDirectCounters, fInfoMeters, fInfoDirectMeters,
	fInfoCtrlMeta, fInfoValueSets, fInfoRegisters, fInfoDigests, fInfoTypeInfo protowire.Number = 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 200
	// PkgInfo
	fPkgName, fPkgArch protowire.Number = 1, 5
	// Preamble
	fPreID, fPreName, fPreAlias, fPreAnnotations protowire.Number = 1, 2, 3, 4
	// MatchField
	fMFID, fMFName, fMFBitwidth, fMFMatchType protowire.Number = 1, 2, 4, 5
	// Table
	fTblPreamble, fTblMatchFields, fTblActionRefs, fTblConstDefault, fTblDirectRes, fTblSize, fTblIsConst protowire.Number = 1, 2, 3, 4, 7, 8, 10
	fTblIdleTimeoutBehavior                                                                               protowire.Number = 9
	// ActionRef
	fARID, fARScope protowire.Number = 1, 3
	// Action, Action.Param
	fActPreamble, fActParams                 protowire.Number = 1, 2
	fAPID, fAPName, fAPBitwidth              protowire.Number = 1, 2, 4
	fCtrPreamble, fCtrSpec, fCtrSize         protowire.Number = 1, 2, 3 // Counter, Meter (same numbers)
	fDirPreamble, fDirSpec, fDirTable        protowire.Number = 1, 2, 3 // DirectCounter, DirectMeter
	fSpecUnit                                protowire.Number = 1       // CounterSpec, MeterSpec
	fCPMPreamble, fCPMMetadata               protowire.Number = 1, 2
	fCPMID, fCPMName, fCPMBitwidth           protowire.Number = 1, 2, 4
	fVSPreamble, fVSMatch, fVSSize           protowire.Number = 1, 2, 3
	fRegPreamble, fRegTypeSpec, fRegSize     protowire.Number = 1, 2, 3
	fDigPreamble, fDigTypeSpec               protowire.Number = 1, 2
	fTSBitstring, fTSBool, fTSStruct, fTSErr protowire.Number = 1, 2, 4, 10
	fTSSerializableEnum                      protowire.Number = 11
	fBitstringBit, fBitstringInt             protowire.Number = 1, 2
	fBitwidth                                protowire.Number = 1
	fNamedTypeName                           protowire.Number = 1
	fTypeInfoStructs                         protowire.Number = 1
	fMapKey, fMapValue                       protowire.Number = 1, 2
	fStructTypeMembers                       protowire.Number = 1
	fMemberName, fMemberTypeSpec             protowire.Number = 1, 2
)

var matchTypes = map[string]uint64{"EXACT": 2, "LPM": 3, "TERNARY": 4, "RANGE": 5, "OPTIONAL": 6}

var scopes = map[string]uint64{"TABLE_ONLY": 1, "DEFAULT_ONLY": 2}

var counterUnits = map[string]uint64{"BYTES": 1, "PACKETS": 2, "BOTH": 3}

var meterUnits = map[string]uint64{"BYTES": 1, "PACKETS": 2}

type fn func(e *enc)

func (f fn) appendTo(e *enc) { f(e) }

func preamble(p p4info.Preamble) marshaler {
	return fn(func(e *enc) {
		e.varint(fPreID, uint64(p.ID))
		e.string(fPreName, p.Name)
		e.string(fPreAlias, p.Alias)
		for _, a := range p.Annotations {
			e.bytesAlways(fPreAnnotations, []byte(a))
		}
	})
}

func size(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

func matchField(m p4info.MatchField) marshaler {
	return fn(func(e *enc) {
		e.varint(fMFID, uint64(m.ID))
		e.string(fMFName, m.Name)
		e.int32(fMFBitwidth, int32(m.Bitwidth))
		e.varint(fMFMatchType, matchTypes[m.MatchType])
	})
}

func bitstringSpec(b *p4info.BitstringSpec) marshaler {
	return fn(func(e *enc) {
		switch {
		case b.Bit != nil:
			e.msg(fBitstringBit, fn(func(e *enc) { e.int32(fBitwidth, int32(b.Bit.Bitwidth)) }))
		case b.Int != nil:
			e.msg(fBitstringInt, fn(func(e *enc) { e.int32(fBitwidth, int32(b.Int.Bitwidth)) }))
		}
	})
}

func named(name string) marshaler { return fn(func(e *enc) { e.string(fNamedTypeName, name) }) }

func empty() marshaler { return fn(func(*enc) {}) }

func typeSpec(t p4info.TypeSpec) marshaler {
	return fn(func(e *enc) {
		switch {
		case t.Bitstring != nil:
			e.msg(fTSBitstring, bitstringSpec(t.Bitstring))
		case t.Bool != nil:
			e.msg(fTSBool, empty())
		case t.Struct != nil:
			e.msg(fTSStruct, named(t.Struct.Name))
		case t.Serializable != nil:
			e.msg(fTSSerializableEnum, named(t.Serializable.Name))
		case t.Error != nil:
			e.msg(fTSErr, empty())
		}
	})
}

// EncodeP4Info encodes the model as p4.config.v1.P4Info.
func EncodeP4Info(m *p4info.P4Info) []byte {
	var e enc
	e.msg(fInfoPkg, fn(func(e *enc) { e.string(fPkgName, m.PkgInfo.Name); e.string(fPkgArch, m.PkgInfo.Arch) }))
	for _, t := range m.Tables {
		e.msg(fInfoTables, fn(func(e *enc) {
			e.msg(fTblPreamble, preamble(t.Preamble))
			for _, mf := range t.MatchFields {
				e.msg(fTblMatchFields, matchField(mf))
			}
			for _, r := range t.ActionRefs {
				e.msg(fTblActionRefs, fn(func(e *enc) { e.varint(fARID, uint64(r.ID)); e.varint(fARScope, scopes[r.Scope]) }))
			}
			e.varint(fTblConstDefault, uint64(t.ConstDefaultActionID))
			if len(t.DirectResourceIDs) > 0 {
				var packed []byte
				for _, id := range t.DirectResourceIDs {
					packed = protowire.AppendVarint(packed, uint64(id))
				}
				e.bytesAlways(fTblDirectRes, packed)
			}
			e.int64(fTblSize, size(t.Size))
			if t.IdleTimeoutBehavior == "NOTIFY_CONTROL" {
				e.varint(fTblIdleTimeoutBehavior, 1)
			}
			e.bool(fTblIsConst, t.IsConstTable)
		}))
	}
	for _, a := range m.Actions {
		e.msg(fInfoActions, fn(func(e *enc) {
			e.msg(fActPreamble, preamble(a.Preamble))
			for _, p := range a.Params {
				e.msg(fActParams, fn(func(e *enc) {
					e.varint(fAPID, uint64(p.ID))
					e.string(fAPName, p.Name)
					e.int32(fAPBitwidth, int32(p.Bitwidth))
				}))
			}
		}))
	}
	for _, c := range m.Counters {
		e.msg(fInfoCounters, fn(func(e *enc) {
			e.msg(fCtrPreamble, preamble(c.Preamble))
			e.msg(fCtrSpec, fn(func(e *enc) { e.varint(fSpecUnit, counterUnits[c.Spec.Unit]) }))
			e.int64(fCtrSize, size(c.Size))
		}))
	}
	for _, c := range m.DirectCounters {
		e.msg(fInfoDirectCounters, fn(func(e *enc) {
			e.msg(fDirPreamble, preamble(c.Preamble))
			e.msg(fDirSpec, fn(func(e *enc) { e.varint(fSpecUnit, counterUnits[c.Spec.Unit]) }))
			e.varint(fDirTable, uint64(c.DirectTableID))
		}))
	}
	for _, c := range m.Meters {
		e.msg(fInfoMeters, fn(func(e *enc) {
			e.msg(fCtrPreamble, preamble(c.Preamble))
			e.msg(fCtrSpec, fn(func(e *enc) { e.varint(fSpecUnit, meterUnits[c.Spec.Unit]) }))
			e.int64(fCtrSize, size(c.Size))
		}))
	}
	for _, c := range m.DirectMeters {
		e.msg(fInfoDirectMeters, fn(func(e *enc) {
			e.msg(fDirPreamble, preamble(c.Preamble))
			e.msg(fDirSpec, fn(func(e *enc) { e.varint(fSpecUnit, meterUnits[c.Spec.Unit]) }))
			e.varint(fDirTable, uint64(c.DirectTableID))
		}))
	}
	for _, c := range m.ControllerPacketMetadata {
		e.msg(fInfoCtrlMeta, fn(func(e *enc) {
			e.msg(fCPMPreamble, preamble(c.Preamble))
			for _, md := range c.Metadata {
				e.msg(fCPMMetadata, fn(func(e *enc) {
					e.varint(fCPMID, uint64(md.ID))
					e.string(fCPMName, md.Name)
					e.int32(fCPMBitwidth, int32(md.Bitwidth))
				}))
			}
		}))
	}
	for _, v := range m.ValueSets {
		e.msg(fInfoValueSets, fn(func(e *enc) {
			e.msg(fVSPreamble, preamble(v.Preamble))
			for _, mf := range v.Match {
				e.msg(fVSMatch, matchField(mf))
			}
			e.int32(fVSSize, int32(v.Size))
		}))
	}
	for _, r := range m.Registers {
		e.msg(fInfoRegisters, fn(func(e *enc) {
			e.msg(fRegPreamble, preamble(r.Preamble))
			e.msg(fRegTypeSpec, typeSpec(p4info.TypeSpec{Bitstring: r.TypeSpec.Bitstring, Bool: r.TypeSpec.Bool}))
			e.int32(fRegSize, int32(r.Size))
		}))
	}
	for _, d := range m.Digests {
		e.msg(fInfoDigests, fn(func(e *enc) {
			e.msg(fDigPreamble, preamble(d.Preamble))
			e.msg(fDigTypeSpec, typeSpec(d.TypeSpec))
		}))
	}
	if m.TypeInfo != nil && len(m.TypeInfo.Structs) > 0 {
		names := make([]string, 0, len(m.TypeInfo.Structs))
		for n := range m.TypeInfo.Structs {
			names = append(names, n)
		}
		sort.Strings(names)
		e.msg(fInfoTypeInfo, fn(func(e *enc) {
			for _, n := range names {
				st := m.TypeInfo.Structs[n]
				e.msg(fTypeInfoStructs, fn(func(e *enc) {
					e.string(fMapKey, n)
					e.msg(fMapValue, fn(func(e *enc) {
						for _, mem := range st.Members {
							e.msg(fStructTypeMembers, fn(func(e *enc) {
								e.string(fMemberName, mem.Name)
								e.msg(fMemberTypeSpec, typeSpec(mem.TypeSpec))
							}))
						}
					}))
				}))
			}
		}))
	}
	return e.b
}

// object is a named, numbered P4 object of a P4Info: its kind, id, name.
type object struct {
	kind string
	id   uint32
	name string
}

// p4infoKinds are the P4Info sections whose preambles are compared.
var p4infoKinds = map[protowire.Number]string{
	fInfoTables: "table", fInfoActions: "action", fInfoCounters: "counter", fInfoDirectCounters: "direct counter",
	fInfoMeters: "meter", fInfoDirectMeters: "direct meter", fInfoCtrlMeta: "controller packet metadata",
	fInfoValueSets: "value set", fInfoRegisters: "register", fInfoDigests: "digest",
}

// objectsOf lists the preambles of an encoded P4Info (every section's
// preamble is its field 1).
func objectsOf(b []byte) ([]object, error) {
	var out []object
	err := walk(b, func(f field) error {
		kind, ok := p4infoKinds[f.num]
		if !ok {
			return nil
		}
		if err := f.want(protowire.BytesType); err != nil {
			return err
		}
		return walk(f.b, func(g field) error {
			if g.num != 1 {
				return nil
			}
			o := object{kind: kind}
			if err := g.want(protowire.BytesType); err != nil {
				return err
			}
			err := walk(g.b, func(h field) error {
				switch h.num {
				case fPreID:
					o.id = uint32(h.v)
				case fPreName:
					o.name = string(h.b)
				}
				return nil
			})
			out = append(out, o)
			return err
		})
	})
	return out, err
}

// checkP4Info compares a client's P4Info with the compiled program's: every
// object the client names must exist with the same id.
func checkP4Info(client []byte, ours *p4info.P4Info) error {
	theirs, err := objectsOf(client)
	if err != nil {
		return fmt.Errorf("p4info does not decode: %v", err)
	}
	mine, _ := objectsOf(EncodeP4Info(ours))
	byName := map[string]object{}
	for _, o := range mine {
		byName[o.kind+"\x00"+o.name] = o
	}
	for _, o := range theirs {
		m, ok := byName[o.kind+"\x00"+o.name]
		if !ok {
			return fmt.Errorf("p4info names %s %q (id 0x%08x), which the P4 program does not have", o.kind, o.name, o.id)
		}
		if m.id != o.id {
			return fmt.Errorf("p4info gives %s %q the id 0x%08x; the compiled program has 0x%08x", o.kind, o.name, o.id, m.id)
		}
	}
	return nil
}
