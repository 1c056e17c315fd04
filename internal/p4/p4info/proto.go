package p4info

// P4Info as protobuf (p4.config.v1.P4Info, p4lang/p4runtime's p4info.proto
// and p4types.proto), binary and text format, for controllers:
// `edgenf p4 compile --p4info FILE` and P4Runtime's
// GetForwardingPipelineConfig.
//
// The model's P4Info JSON is already protobuf's JSON mapping of P4Info, so
// the protobuf forms are that JSON read by protojson into a dynamic message
// of the schema below and written out again. The schema is the subset of
// p4info.proto edgenf produces (plus action profiles), declared as a
// descriptor rather than generated: no P4Runtime Go module is available,
// and its field names and numbers are checked against the p4runtime PyPI
// package by TestP4InfoProtoMatchesP4RuntimePackage. A field the model
// gains that the schema lacks fails protojson, so it cannot be dropped
// silently.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

const protoPkg = "p4.config.v1"

// schema field constructors: number, proto name, and the type.
type fieldOpt func(*descriptorpb.FieldDescriptorProto)

func field(num int32, name string, typ descriptorpb.FieldDescriptorProto_Type, opts ...fieldOpt) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
	for _, o := range opts {
		o(f)
	}
	return f
}

const (
	tString = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tUint32 = descriptorpb.FieldDescriptorProto_TYPE_UINT32
	tInt32  = descriptorpb.FieldDescriptorProto_TYPE_INT32
	tInt64  = descriptorpb.FieldDescriptorProto_TYPE_INT64
	tBool   = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	tMsg    = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	tEnum   = descriptorpb.FieldDescriptorProto_TYPE_ENUM
)

func repeated(f *descriptorpb.FieldDescriptorProto) {
	f.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
}

// of names a message or enum field's type, relative to the package.
func of(typ string) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) { f.TypeName = proto.String("." + protoPkg + "." + typ) }
}

// oneof puts a field in the message's oneof number i.
func oneof(i int32) fieldOpt {
	return func(f *descriptorpb.FieldDescriptorProto) { f.OneofIndex = proto.Int32(i) }
}

func message(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
}

func withOneof(m *descriptorpb.DescriptorProto, name string) *descriptorpb.DescriptorProto {
	m.OneofDecl = append(m.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String(name)})
	return m
}

func nested(m *descriptorpb.DescriptorProto, sub ...*descriptorpb.DescriptorProto) *descriptorpb.DescriptorProto {
	m.NestedType = append(m.NestedType, sub...)
	return m
}

func enum(name string, values ...any) *descriptorpb.EnumDescriptorProto {
	e := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
	for i := 0; i < len(values); i += 2 {
		e.Value = append(e.Value, &descriptorpb.EnumValueDescriptorProto{
			Name: proto.String(values[i].(string)), Number: proto.Int32(int32(values[i+1].(int)))})
	}
	return e
}

func withEnum(m *descriptorpb.DescriptorProto, e ...*descriptorpb.EnumDescriptorProto) *descriptorpb.DescriptorProto {
	m.EnumType = append(m.EnumType, e...)
	return m
}

// mapEntry is the synthetic entry message of a map<string, value> field.
func mapEntry(name, value string) *descriptorpb.DescriptorProto {
	m := message(name, field(1, "key", tString), field(2, "value", tMsg, of(value)))
	m.Options = &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)}
	return m
}

func schemaFile() *descriptorpb.FileDescriptorProto {
	preamble := func() *descriptorpb.FieldDescriptorProto { return field(1, "preamble", tMsg, of("Preamble")) }
	return &descriptorpb.FileDescriptorProto{
		Name: proto.String("p4/config/v1/p4info.proto"), Package: proto.String(protoPkg), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			message("P4Info",
				field(1, "pkg_info", tMsg, of("PkgInfo")),
				field(2, "tables", tMsg, of("Table"), repeated),
				field(3, "actions", tMsg, of("Action"), repeated),
				field(4, "action_profiles", tMsg, of("ActionProfile"), repeated),
				field(5, "counters", tMsg, of("Counter"), repeated),
				field(6, "direct_counters", tMsg, of("DirectCounter"), repeated),
				field(7, "meters", tMsg, of("Meter"), repeated),
				field(8, "direct_meters", tMsg, of("DirectMeter"), repeated),
				field(9, "controller_packet_metadata", tMsg, of("ControllerPacketMetadata"), repeated),
				field(10, "value_sets", tMsg, of("ValueSet"), repeated),
				field(11, "registers", tMsg, of("Register"), repeated),
				field(12, "digests", tMsg, of("Digest"), repeated),
				field(200, "type_info", tMsg, of("P4TypeInfo"))),
			message("PkgInfo", field(1, "name", tString), field(2, "version", tString),
				field(4, "annotations", tString, repeated), field(5, "arch", tString)),
			message("Preamble", field(1, "id", tUint32), field(2, "name", tString), field(3, "alias", tString),
				field(4, "annotations", tString, repeated)),
			withEnum(withOneof(message("MatchField", field(1, "id", tUint32), field(2, "name", tString),
				field(3, "annotations", tString, repeated), field(4, "bitwidth", tInt32),
				field(5, "match_type", tEnum, of("MatchField.MatchType"), oneof(0)),
				field(7, "other_match_type", tString, oneof(0))), "match"),
				enum("MatchType", "UNSPECIFIED", 0, "EXACT", 2, "LPM", 3, "TERNARY", 4, "RANGE", 5, "OPTIONAL", 6)),
			withEnum(message("Table", preamble(),
				field(2, "match_fields", tMsg, of("MatchField"), repeated),
				field(3, "action_refs", tMsg, of("ActionRef"), repeated),
				field(4, "const_default_action_id", tUint32),
				field(6, "implementation_id", tUint32),
				field(7, "direct_resource_ids", tUint32, repeated),
				field(8, "size", tInt64),
				field(9, "idle_timeout_behavior", tEnum, of("Table.IdleTimeoutBehavior")),
				field(10, "is_const_table", tBool),
				field(11, "has_initial_entries", tBool)),
				enum("IdleTimeoutBehavior", "NO_TIMEOUT", 0, "NOTIFY_CONTROL", 1)),
			withEnum(message("ActionRef", field(1, "id", tUint32), field(2, "annotations", tString, repeated),
				field(3, "scope", tEnum, of("ActionRef.Scope"))),
				enum("Scope", "TABLE_AND_DEFAULT", 0, "TABLE_ONLY", 1, "DEFAULT_ONLY", 2, "GROUP_ACTION", 3)),
			nested(message("Action", preamble(), field(2, "params", tMsg, of("Action.Param"), repeated)),
				message("Param", field(1, "id", tUint32), field(2, "name", tString),
					field(3, "annotations", tString, repeated), field(4, "bitwidth", tInt32))),
			nested(withOneof(message("ActionProfile", preamble(),
				field(2, "table_ids", tUint32, repeated), field(3, "with_selector", tBool),
				field(4, "size", tInt64), field(5, "max_group_size", tInt32),
				field(6, "sum_of_weights", tMsg, of("ActionProfile.SumOfWeights"), oneof(0)),
				field(7, "sum_of_members", tMsg, of("ActionProfile.SumOfMembers"), oneof(0)),
				field(8, "weights_disallowed", tBool)), "selector_size_semantics"),
				message("SumOfWeights"), message("SumOfMembers", field(1, "max_member_weight", tInt32))),
			withEnum(message("CounterSpec", field(1, "unit", tEnum, of("CounterSpec.Unit"))),
				enum("Unit", "UNSPECIFIED", 0, "BYTES", 1, "PACKETS", 2, "BOTH", 3)),
			message("Counter", preamble(), field(2, "spec", tMsg, of("CounterSpec")), field(3, "size", tInt64)),
			message("DirectCounter", preamble(), field(2, "spec", tMsg, of("CounterSpec")), field(3, "direct_table_id", tUint32)),
			withEnum(message("MeterSpec", field(1, "unit", tEnum, of("MeterSpec.Unit")), field(2, "type", tEnum, of("MeterSpec.Type"))),
				enum("Unit", "UNSPECIFIED", 0, "BYTES", 1, "PACKETS", 2),
				enum("Type", "TWO_RATE_THREE_COLOR", 0, "SINGLE_RATE_THREE_COLOR", 1, "SINGLE_RATE_TWO_COLOR", 2)),
			message("Meter", preamble(), field(2, "spec", tMsg, of("MeterSpec")), field(3, "size", tInt64)),
			message("DirectMeter", preamble(), field(2, "spec", tMsg, of("MeterSpec")), field(3, "direct_table_id", tUint32)),
			nested(message("ControllerPacketMetadata", preamble(),
				field(2, "metadata", tMsg, of("ControllerPacketMetadata.Metadata"), repeated)),
				message("Metadata", field(1, "id", tUint32), field(2, "name", tString),
					field(3, "annotations", tString, repeated), field(4, "bitwidth", tInt32))),
			message("ValueSet", preamble(), field(2, "match", tMsg, of("MatchField"), repeated), field(3, "size", tInt32)),
			message("Register", preamble(), field(2, "type_spec", tMsg, of("P4DataTypeSpec")), field(3, "size", tInt32)),
			message("Digest", preamble(), field(2, "type_spec", tMsg, of("P4DataTypeSpec"))),
			// p4types.proto
			nested(message("P4TypeInfo", field(1, "structs", tMsg, of("P4TypeInfo.StructsEntry"), repeated)),
				mapEntry("StructsEntry", "P4StructTypeSpec")),
			withOneof(message("P4DataTypeSpec",
				field(1, "bitstring", tMsg, of("P4BitstringLikeTypeSpec"), oneof(0)),
				field(2, "bool", tMsg, of("P4BoolType"), oneof(0)),
				field(4, "struct", tMsg, of("P4NamedType"), oneof(0)),
				field(5, "header", tMsg, of("P4NamedType"), oneof(0)),
				field(9, "enum", tMsg, of("P4NamedType"), oneof(0)),
				field(10, "error", tMsg, of("P4ErrorType"), oneof(0)),
				field(11, "serializable_enum", tMsg, of("P4NamedType"), oneof(0))), "type_spec"),
			message("P4NamedType", field(1, "name", tString)),
			message("P4BoolType"),
			message("P4ErrorType"),
			withOneof(message("P4BitstringLikeTypeSpec",
				field(1, "bit", tMsg, of("P4BitTypeSpec"), oneof(0)),
				field(2, "int", tMsg, of("P4IntTypeSpec"), oneof(0)),
				field(4, "annotations", tString, repeated)), "type_spec"),
			message("P4BitTypeSpec", field(1, "bitwidth", tInt32)),
			message("P4IntTypeSpec", field(1, "bitwidth", tInt32)),
			nested(message("P4StructTypeSpec", field(1, "members", tMsg, of("P4StructTypeSpec.Member"), repeated),
				field(2, "annotations", tString, repeated)),
				message("Member", field(1, "name", tString), field(2, "type_spec", tMsg, of("P4DataTypeSpec")))),
		},
	}
}

var p4infoDesc = sync.OnceValue(func() protoreflect.MessageDescriptor {
	fd, err := protodesc.NewFile(schemaFile(), nil)
	if err != nil {
		panic("p4info: the P4Info schema does not build: " + err.Error())
	}
	return fd.Messages().ByName("P4Info")
})

// protoMessage returns the P4Info as a p4.config.v1.P4Info message.
func (m *P4Info) protoMessage() (protoreflect.Message, error) {
	js, err := m.MarshalP4Info()
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(p4infoDesc())
	if err := protojson.Unmarshal(js, msg); err != nil {
		return nil, fmt.Errorf("P4Info: %v", err)
	}
	return msg, nil
}

// ProtoBinary encodes the P4Info in protobuf's wire format, fields in
// number order and map entries sorted (the same bytes for the same model).
func (m *P4Info) ProtoBinary() ([]byte, error) {
	msg, err := m.protoMessage()
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(msg.Interface())
}

// ProtoText encodes the P4Info in protobuf's text format, as p4c's
// --p4runtime-files FILE.txt does: fields in number order, two-space
// indents, map entries sorted by key. protobuf's text parsers (C++,
// Python's text_format, Go's prototext) read it.
func (m *P4Info) ProtoText() ([]byte, error) {
	msg, err := m.protoMessage()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	writeText(&b, msg, 0)
	return []byte(b.String()), nil
}

func writeText(b *strings.Builder, msg protoreflect.Message, depth int) {
	fields := msg.Descriptor().Fields()
	order := make([]protoreflect.FieldDescriptor, fields.Len())
	for i := range order {
		order[i] = fields.Get(i)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].Number() < order[j].Number() })
	indent := strings.Repeat("  ", depth)
	for _, fd := range order {
		if !msg.Has(fd) {
			continue
		}
		v := msg.Get(fd)
		switch {
		case fd.IsMap():
			var keys []protoreflect.MapKey
			v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool { keys = append(keys, k); return true })
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				b.WriteString(indent + string(fd.Name()) + " {\n")
				writeScalar(b, indent+"  ", fd.MapKey(), k.Value())
				writeValue(b, fd.MapValue(), v.Map().Get(k), depth+1)
				b.WriteString(indent + "}\n")
			}
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				writeValue(b, fd, v.List().Get(i), depth)
			}
		default:
			writeValue(b, fd, v, depth)
		}
	}
}

func writeValue(b *strings.Builder, fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) {
	indent := strings.Repeat("  ", depth)
	if fd.Kind() == protoreflect.MessageKind {
		b.WriteString(indent + string(fd.Name()) + " {\n")
		writeText(b, v.Message(), depth+1)
		b.WriteString(indent + "}\n")
		return
	}
	writeScalar(b, indent, fd, v)
}

func writeScalar(b *strings.Builder, indent string, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	var s string
	switch fd.Kind() {
	case protoreflect.StringKind:
		s = quote(v.String())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			s = string(ev.Name())
		} else {
			s = strconv.Itoa(int(v.Enum()))
		}
	default:
		s = v.String() // the schema's integers and bools
	}
	b.WriteString(indent + string(fd.Name()) + ": " + s + "\n")
}

// quote writes a string in text format's C-style escapes: printable ASCII
// as is, everything else as octal bytes.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
