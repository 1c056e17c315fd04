package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/all"
	"github.com/edgenf/edgenf/internal/schema/schematest"
)

// drawn is how many values of each schema the tests draw.
const drawn = 300

// TestSchemaValidIsAccepted: what the OpenAPI document calls valid — a cube
// of each NF type with its settings and ports, and each table's entries —
// passes the model's validation, or is refused for the state it meets
// (404, 409) or by a rule the document states in words (422): never as
// malformed (400), never with an error the API answers 500. What is
// accepted is answered in a canonical form, which the document calls valid
// too. Schemas and validation come from the same Go types; this keeps them
// in step.
func TestSchemaValidIsAccepted(t *testing.T) {
	g := schematest.New(1)
	for _, typ := range cube.Types() {
		t.Run(typ.Name, func(t *testing.T) {
			create := cubeRequestSchema(typ)
			n := drawn
			if typ.Prepare != nil {
				n = 20 // each cube compiles its program (which fails, 422)
			}
			for range n {
				raw := drawValid(t, g, create)
				var req cubeRequest
				if err := cube.DecodeInto("", raw, &req); err != nil {
					t.Fatalf("%s\ndoes not decode: %v", raw, err)
				}
				c, err := req.cube()
				if err == nil {
					topo := cube.NewTopology()
					if err = topo.AddCube(c); err == nil {
						err = topo.Validate(nil)
					}
				}
				if accepted(t, "cube", raw, err) {
					answered(t, g, "settings", configOf(typ), c.Config)
					for _, p := range c.Ports {
						answered(t, g, "port settings", portConfigSchema(typ), p.Config)
					}
				}
			}
			doc := docCubeSchema(typ)
			for range n {
				raw := drawValid(t, g, doc)
				var dc cube.DocCube
				if err := cube.DecodeInto("", raw, &dc); err != nil {
					t.Fatalf("%s\ndoes not decode: %v", raw, err)
				}
				topo, err := (&cube.Document{Cubes: []cube.DocCube{dc}}).Topology()
				if err == nil {
					err = topo.Validate(nil)
				}
				accepted(t, "topology document", raw, err)
			}
			fixture := fixtureCube(t, typ)
			g.Names = []string{"p0", "p1"}
			defer func() { g.Names = nil }()
			for _, tb := range typ.Tables {
				item := SchemaOf(tb.Item)
				for range drawn {
					raw := drawValid(t, g, item)
					v, _, err := tb.DecodeEntry(fixture, raw)
					if accepted(t, tb.Name, raw, err) {
						canon, _ := json.Marshal(v)
						answered(t, g, tb.Name, item, canon)
					}
				}
			}
		})
	}
}

// drawValid draws a value of s that the schema checker calls valid (a
// schema no value can satisfy fails here).
func drawValid(t *testing.T, g *schematest.Gen, s *Schema) json.RawMessage {
	t.Helper()
	raw := g.JSON(s)
	if err := g.Check(s, decoded(raw)); err != nil {
		t.Fatalf("drawn %s\nbut invalid by its schema: %v", raw, err)
	}
	return raw
}

// answered fails the test if what the API answers (raw) is invalid by s.
func answered(t *testing.T, g *schematest.Gen, what string, s *Schema, raw json.RawMessage) {
	t.Helper()
	if len(raw) == 0 {
		return
	}
	if err := g.Check(s, decoded(raw)); err != nil {
		t.Errorf("%s answered as %s\nis invalid by the document: %v", what, raw, err)
	}
}

func decoded(raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

// configOf is the schema of NF type typ's settings.
func configOf(typ *cube.Type) *Schema {
	s := &Schema{Properties: map[string]*Schema{}}
	setConfig(s, typ)
	return s.Properties["config"]
}

// accepted reports whether raw was accepted, and fails the test if err
// refuses it as malformed or is not a model error.
func accepted(t *testing.T, what string, raw json.RawMessage, err error) bool {
	t.Helper()
	var fe *cube.FieldError
	switch {
	case err == nil:
		return true
	case !errors.As(err, &fe):
		t.Errorf("%s %s\nrefused with an error of no kind (500): %v", what, raw, err)
	case errors.Is(err, cube.ErrInvalid):
		t.Errorf("%s %s\nvalid by the schema, refused as malformed (400): %v", what, raw, err)
	}
	return false
}

// fixtureCube is a cube of typ with default settings and, unless it is
// transparent, ports p0 and p1 (or the first two names its ports may
// have) on two subnets (a p4 cube runs a program
// with tables of every match kind).
func fixtureCube(t *testing.T, typ *cube.Type) *cube.Cube {
	c := &cube.Cube{Name: "c", Type: typ.Name, Hook: typ.Hooks[0]}
	if !typ.Transparent {
		names := []string{"p0", "p1"}
		if len(typ.PortNames) >= 2 {
			names = typ.PortNames
		}
		c.Ports = []cube.Port{{Name: names[0], Index: 0, Addresses: []string{"198.18.0.1/24"}},
			{Name: names[1], Index: 1, Addresses: []string{"198.19.0.1/16"}}}
	}
	if typ.Name == "p4" {
		src, err := os.ReadFile("../../examples/p4/acl.p4")
		if err != nil {
			t.Fatal(err)
		}
		c.Config, _ = json.Marshal(map[string]string{"program": "acl.p4", "source": string(src)})
	}
	if typ.Name == "nat64" {
		c.Config = json.RawMessage(`{"pool":"198.19.64.1"}`) // required
	}
	topo := cube.NewTopology()
	topo.Put(c)
	if err := topo.Validate(nil); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return c
}

// TestCaptureRequestSchemaValidIsAccepted: a capture request the document
// calls valid passes the checks made before the capture attaches (its
// point is then looked up: 404, 403), or is refused by a rule the document
// states (422), never as malformed.
func TestCaptureRequestSchemaValidIsAccepted(t *testing.T) {
	g := schematest.New(2)
	s := SchemaOf(&CaptureRequest{})
	for range drawn {
		raw := drawValid(t, g, s)
		var req CaptureRequest
		if err := cube.DecodeInto("", raw, &req); err != nil {
			t.Fatalf("%s\ndoes not decode: %v", raw, err)
		}
		_, err := req.check()
		accepted(t, "capture", raw, err)
	}
}
