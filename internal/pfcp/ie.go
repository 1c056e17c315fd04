package pfcp

import (
	"encoding/binary"
	"fmt"
)

// IEType is an information element type (TS 29.244 table 8.1.2-1). Types
// from 32768 are vendor-specific and carry an Enterprise ID.
type IEType uint16

// IE is one information element. A grouped IE (spec.go says which) holds
// Children and no Value; the others hold their octets in Value.
type IE struct {
	Type IEType
	// Enterprise is the Enterprise ID of a vendor-specific IE.
	Enterprise uint16
	Value      []byte
	Children   IEs
}

// IEs is a list of IEs, in message order.
type IEs []*IE

// Vendor reports whether the IE is vendor-specific.
func (t IEType) Vendor() bool { return t >= 32768 }

func (t IEType) String() string {
	if s, ok := ieSpecs[t]; ok {
		return s.Name
	}
	if t.Vendor() {
		return fmt.Sprintf("vendor IE %d", uint16(t))
	}
	return fmt.Sprintf("IE type %d", uint16(t))
}

// Grouped reports whether IEs of type t hold other IEs.
func (t IEType) Grouped() bool { return ieSpecs[t].Grouped }

// maxDepth bounds the nesting of grouped IEs (the deepest in the
// specification is four levels): a hostile message cannot make the parser
// recurse without bound.
const maxDepth = 8

func parseIEs(b []byte, depth int) (IEs, error) {
	var out IEs
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, &Error{Cause: CauseInvalidLength, Msg: fmt.Sprintf("%d octets left after the last IE: too short for an IE header", len(b))}
		}
		t := IEType(binary.BigEndian.Uint16(b))
		n := int(binary.BigEndian.Uint16(b[2:]))
		if 4+n > len(b) {
			return nil, &Error{Cause: CauseInvalidLength, Offending: t, Msg: fmt.Sprintf("%s: length %d overruns its container (%d octets left)", t, n, len(b)-4)}
		}
		ie := &IE{Type: t}
		v := b[4 : 4+n]
		if t.Vendor() {
			if n < 2 {
				return nil, &Error{Cause: CauseInvalidLength, Offending: t, Msg: fmt.Sprintf("%s: %d octets cannot hold an Enterprise ID", t, n)}
			}
			ie.Enterprise = binary.BigEndian.Uint16(v)
			v = v[2:]
		}
		if t.Grouped() {
			if depth >= maxDepth {
				return nil, &Error{Cause: CauseMandatoryIEIncorrect, Offending: t, Msg: "grouped IEs nested too deep"}
			}
			kids, err := parseIEs(v, depth+1)
			if err != nil {
				return nil, within(err, t)
			}
			ie.Children = kids
		} else {
			ie.Value = v
		}
		out = append(out, ie)
		b = b[4+n:]
	}
	return out, nil
}

func (ie *IE) append(b []byte) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, uint16(ie.Type))
	b = append(b, 0, 0)
	if ie.Type.Vendor() {
		b = binary.BigEndian.AppendUint16(b, ie.Enterprise)
	}
	if len(ie.Children) > 0 || ie.Type.Grouped() {
		for _, c := range ie.Children {
			b = c.append(b)
		}
	} else {
		b = append(b, ie.Value...)
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start-4))
	return b
}

// Marshal encodes one IE (type, length, content).
func (ie *IE) Marshal() []byte { return ie.append(nil) }

// Find returns the first IE of type t, or nil.
func (l IEs) Find(t IEType) *IE {
	for _, ie := range l {
		if ie.Type == t {
			return ie
		}
	}
	return nil
}

// All returns every IE of type t.
func (l IEs) All(t IEType) IEs {
	var out IEs
	for _, ie := range l {
		if ie.Type == t {
			out = append(out, ie)
		}
	}
	return out
}

// NewIE makes an IE with the given content.
func NewIE(t IEType, v []byte) *IE { return &IE{Type: t, Value: v} }

// Group makes a grouped IE; nil children are skipped, so optional parts can
// be written inline.
func Group(t IEType, children ...*IE) *IE {
	ie := &IE{Type: t}
	for _, c := range children {
		if c != nil {
			ie.Children = append(ie.Children, c)
		}
	}
	return ie
}

// U8IE, U16IE and U32IE make IEs holding one big-endian integer.
func U8IE(t IEType, v uint8) *IE   { return NewIE(t, []byte{v}) }
func U16IE(t IEType, v uint16) *IE { return NewIE(t, binary.BigEndian.AppendUint16(nil, v)) }
func U32IE(t IEType, v uint32) *IE { return NewIE(t, binary.BigEndian.AppendUint32(nil, v)) }

// U8 reads the first octet of the IE.
func (ie *IE) U8() (uint8, error) {
	if len(ie.Value) < 1 {
		return 0, ie.short(1)
	}
	return ie.Value[0], nil
}

// U16 reads the first two octets of the IE.
func (ie *IE) U16() (uint16, error) {
	if len(ie.Value) < 2 {
		return 0, ie.short(2)
	}
	return binary.BigEndian.Uint16(ie.Value), nil
}

// U32 reads the first four octets of the IE.
func (ie *IE) U32() (uint32, error) {
	if len(ie.Value) < 4 {
		return 0, ie.short(4)
	}
	return binary.BigEndian.Uint32(ie.Value), nil
}

func (ie *IE) short(want int) error {
	return &Error{Cause: CauseMandatoryIEIncorrect, Offending: ie.Type,
		Msg: fmt.Sprintf("%s: %d octets, at least %d needed", ie.Type, len(ie.Value), want)}
}
