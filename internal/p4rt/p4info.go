package p4rt

// A client's P4Info (SetForwardingPipelineConfig) read back to check it
// against the compiled program. The program's own P4Info in protobuf form
// is the model's (p4info.P4Info.ProtoBinary).

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"google.golang.org/protobuf/encoding/protowire"
)

// object is a named, numbered P4 object of a P4Info: its kind, id, name.
type object struct {
	kind string
	id   uint32
	name string
}

// p4infoKinds are the P4Info sections whose preambles are compared, by
// field number of p4.config.v1.P4Info.
var p4infoKinds = map[protowire.Number]string{
	2: "table", 3: "action", 4: "action profile", 5: "counter", 6: "direct counter", 7: "meter", 8: "direct meter",
	9: "controller packet metadata", 10: "value set", 11: "register", 12: "digest",
}

// Preamble fields.
const fPreID, fPreName protowire.Number = 1, 2

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
	b, err := ours.ProtoBinary()
	if err != nil {
		return err
	}
	mine, err := objectsOf(b)
	if err != nil {
		return err
	}
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
