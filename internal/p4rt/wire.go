package p4rt

// Protobuf wire helpers: a small encoder and a field walker over
// google.golang.org/protobuf/encoding/protowire. The message types
// (messages.go) use them to marshal exactly the fields of p4runtime.proto,
// p4data.proto, p4info.proto and google/rpc/status.proto that edgenf uses.

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// enc appends fields in proto3 form: zero scalars are left out, messages
// and oneof members are written when present.
type enc struct{ b []byte }

func (e *enc) varint(n protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

// varintAlways writes a varint even when zero (a oneof member).
func (e *enc) varintAlways(n protowire.Number, v uint64) {
	e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

// int32 fields are varints of the sign-extended 64-bit value.
func (e *enc) int32(n protowire.Number, v int32) { e.varint(n, uint64(int64(v))) }
func (e *enc) int64(n protowire.Number, v int64) { e.varint(n, uint64(v)) }
func (e *enc) bool(n protowire.Number, v bool) {
	if v {
		e.varint(n, 1)
	}
}

// boolAlways writes a bool even when false (a oneof member).
func (e *enc) boolAlways(n protowire.Number, v bool) {
	e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v))
}

func (e *enc) bytes(n protowire.Number, v []byte) {
	if len(v) == 0 {
		return
	}
	e.bytesAlways(n, v)
}

// bytesAlways writes a bytes field even when empty (a oneof member, a
// repeated element).
func (e *enc) bytesAlways(n protowire.Number, v []byte) {
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, v)
}

func (e *enc) string(n protowire.Number, v string) {
	if v == "" {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = protowire.AppendString(e.b, v)
}

// marshaler is a message that appends its fields.
type marshaler interface{ appendTo(e *enc) }

// msg writes a present sub-message (nil: absent).
func (e *enc) msg(n protowire.Number, m marshaler) {
	if m == nil {
		return
	}
	var sub enc
	m.appendTo(&sub)
	e.bytesAlways(n, sub.b)
}

func marshal(m marshaler) []byte {
	var e enc
	m.appendTo(&e)
	return e.b
}

// field is one field read from the wire.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64 // varint, fixed32, fixed64
	b   []byte // bytes
}

// walk calls fn for each field of b; unknown fields are skipped by fn
// simply not handling them.
func walk(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var x uint32
			x, n = protowire.ConsumeFixed32(b)
			f.v = uint64(x)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// want checks a field's wire type.
func (f field) want(t protowire.Type) error {
	if f.typ != t {
		return fmt.Errorf("field %d: wire type %d, want %d", f.num, f.typ, t)
	}
	return nil
}

func (f field) raw() ([]byte, error) {
	if err := f.want(protowire.BytesType); err != nil {
		return nil, err
	}
	return append([]byte(nil), f.b...), nil
}

// unmarshaler is a message that reads its fields.
type unmarshaler interface{ unmarshal(b []byte) error }

// sub decodes a sub-message field into m.
func (f field) sub(m unmarshaler) error {
	if err := f.want(protowire.BytesType); err != nil {
		return err
	}
	return m.unmarshal(f.b)
}

// set stores the result of a typed accessor into dst, keeping the first
// error.
func set[T any](dst *T, v T, err error) error {
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
