package p4rt

// The table-driven part of the codec: a message whose fields carry their
// protobuf numbers in `pb:"N"` struct tags is encoded and decoded from
// that table. Kinds follow the Go types: integers and bools are varints
// (int32 and int64 as protobuf's, sign-extended), string and []byte are
// length-delimited, a pointer to a message is a sub-message (nil: absent)
// and a slice of such pointers a repeated one; zero scalars and empty
// strings and bytes are left out, as proto3 does. Messages with oneof or
// presence rules of their own (Entity, TableEntry, FieldMatch, Replica,
// P4Data, ...) keep a hand-written appendTo and unmarshal.

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

type tagField struct {
	index int
	num   protowire.Number
}

type tagLayout struct {
	fields []tagField // struct order (the encoding order)
	byNum  map[protowire.Number]int
}

var tagLayouts sync.Map // reflect.Type → *tagLayout

func layoutOf(t reflect.Type) *tagLayout {
	if l, ok := tagLayouts.Load(t); ok {
		return l.(*tagLayout)
	}
	l := &tagLayout{byNum: map[protowire.Number]int{}}
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("pb")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(tag)
		if err != nil || n <= 0 {
			panic(fmt.Sprintf("p4rt: %s.%s: bad pb tag %q", t.Name(), t.Field(i).Name, tag))
		}
		l.byNum[protowire.Number(n)] = len(l.fields)
		l.fields = append(l.fields, tagField{index: i, num: protowire.Number(n)})
	}
	tagLayouts.Store(t, l)
	return l
}

// appendTagged encodes m, a pointer to a tagged message.
func appendTagged(e *enc, m any) {
	v := reflect.ValueOf(m).Elem()
	for _, f := range layoutOf(v.Type()).fields {
		fv := v.Field(f.index)
		switch fv.Kind() {
		case reflect.Uint32, reflect.Uint64:
			e.varint(f.num, fv.Uint())
		case reflect.Int32, reflect.Int64:
			e.varint(f.num, uint64(fv.Int()))
		case reflect.Bool:
			e.bool(f.num, fv.Bool())
		case reflect.String:
			e.string(f.num, fv.String())
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.Uint8 {
				e.bytes(f.num, fv.Bytes())
				continue
			}
			for i := range fv.Len() {
				e.msg(f.num, fv.Index(i).Interface().(marshaler))
			}
		case reflect.Pointer:
			if !fv.IsNil() {
				e.msg(f.num, fv.Interface().(marshaler))
			}
		}
	}
}

// unmarshalTagged decodes b into m, a pointer to a tagged message; fields
// it does not list are skipped.
func unmarshalTagged(b []byte, m any) error {
	v := reflect.ValueOf(m).Elem()
	l := layoutOf(v.Type())
	return walk(b, func(f field) error {
		i, ok := l.byNum[f.num]
		if !ok {
			return nil
		}
		fv := v.Field(l.fields[i].index)
		switch fv.Kind() {
		case reflect.Uint32, reflect.Uint64, reflect.Int32, reflect.Int64, reflect.Bool:
			if err := f.want(protowire.VarintType); err != nil {
				return err
			}
			switch fv.Kind() {
			case reflect.Uint32, reflect.Uint64:
				fv.SetUint(f.v)
			case reflect.Int32, reflect.Int64:
				fv.SetInt(int64(f.v))
			default:
				fv.SetBool(f.v != 0)
			}
			return nil
		case reflect.String:
			if err := f.want(protowire.BytesType); err != nil {
				return err
			}
			fv.SetString(string(f.b))
			return nil
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.Uint8 {
				raw, err := f.raw()
				if err == nil {
					fv.SetBytes(raw)
				}
				return err
			}
			elem := reflect.New(fv.Type().Elem().Elem())
			fv.Set(reflect.Append(fv, elem))
			return f.sub(elem.Interface().(unmarshaler))
		case reflect.Pointer:
			elem := reflect.New(fv.Type().Elem())
			fv.Set(elem)
			return f.sub(elem.Interface().(unmarshaler))
		}
		return nil
	})
}
