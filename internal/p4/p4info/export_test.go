package p4info

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// SchemaFile is the P4Info schema, encoded, for the check against the
// p4runtime package.
func SchemaFile() []byte { b, _ := proto.Marshal(schemaFile()); return b }

// ProtoDescriptor is the P4Info message descriptor of the schema.
func ProtoDescriptor() protoreflect.MessageDescriptor { return p4infoDesc() }
