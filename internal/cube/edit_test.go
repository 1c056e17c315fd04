package cube_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
)

func chain(t *testing.T) *cube.Topology {
	t.Helper()
	tp := cube.NewTopology()
	for _, n := range []string{"c1", "c2"} {
		if err := tp.AddCube(&cube.Cube{Name: n, Type: "portfwd"}); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"p0", "p1"} {
			if err := tp.AddPort(n, cube.Port{Name: p, Index: -1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tp.SetPeer("c1:p1", "c2:p0"); err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestPeeringIsSymmetricAndDeletingACubeUnpeers(t *testing.T) {
	tp := chain(t)
	if tp.Lookup("c2").Port("p0").Peer != "c1:p1" {
		t.Fatal("peer not set on both sides")
	}
	if tp.Lookup("c1").Port("p1").Index != 1 {
		t.Fatal("auto index")
	}
	if err := tp.DeleteCube("c2"); err != nil {
		t.Fatal(err)
	}
	if tp.Lookup("c1").Port("p1").Peer != "" {
		t.Fatal("deleting c2 left c1:p1 peered")
	}
	if err := tp.Validate(nil); err != nil {
		t.Fatal(err)
	}
}

func TestAttachPositions(t *testing.T) {
	tp := chain(t)
	for _, n := range []string{"m1", "m2", "m3", "m4"} {
		tp.AddCube(&cube.Cube{Name: n, Type: "monitor"})
	}
	steps := []struct{ cube, pos string }{{"m1", "last"}, {"m2", "first"}, {"m3", "after:m2"}, {"m4", "before:m1"}}
	for _, s := range steps {
		if err := tp.Attach(s.cube, "c2:p0", s.pos); err != nil {
			t.Fatal(err)
		}
	}
	if got := tp.Attachments["c2:p0"]; !reflect.DeepEqual(got, []string{"m2", "m3", "m4", "m1"}) {
		t.Fatalf("order %v", got)
	}
	if err := tp.Attach("m1", "c1:p0", ""); !errors.Is(err, cube.ErrConflict) {
		t.Fatalf("double attach: %v", err)
	}
	if err := tp.Validate(nil); err != nil {
		t.Fatal(err)
	}
	tp.Detach("m3")
	if got := tp.Attachments["c2:p0"]; !reflect.DeepEqual(got, []string{"m2", "m4", "m1"}) {
		t.Fatalf("after detach %v", got)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		mutate func(*cube.Topology)
		field  string
	}{
		{func(tp *cube.Topology) { tp.Lookup("c1").Ports[0].Index = 99 }, "cubes.c1.ports[p0].index"},
		{func(tp *cube.Topology) { tp.Lookup("c1").Ports[0].MAC = "nope" }, "cubes.c1.ports[p0].mac"},
		{func(tp *cube.Topology) { tp.Lookup("c1").Ports[0].Addresses = []string{"198.18.0.1"} }, "cubes.c1.ports[p0].addresses"},
		{func(tp *cube.Topology) { tp.Lookup("c1").Hook = "tc" }, "cubes.c1.ports[p1].peer"},
		{func(tp *cube.Topology) { tp.Lookup("c2").Port("p0").Peer = "" }, "cubes.c1.ports[p1].peer"},
		{func(tp *cube.Topology) { tp.Lookup("c1").Config = json.RawMessage(`{"x":1}`) }, "cubes.c1.config"},
		{func(tp *cube.Topology) { tp.Attachments["c1:p0"] = []string{"c2"} }, "attachments.c1:p0"},
	}
	for _, c := range cases {
		tp := chain(t)
		c.mutate(tp)
		err := tp.Validate(nil)
		var fe *cube.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("want an error on %s, got %v", c.field, err)
		}
	}
}

func TestDocumentRoundTrip(t *testing.T) {
	tp := chain(t)
	tp.AddCube(&cube.Cube{Name: "m1", Type: "monitor"})
	tp.Attach("m1", "c2:p0", "")
	if _, err := tp.PutEntry("c1", "rules", json.RawMessage(`{"in_port":"p0","out_port":"p1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := tp.Validate(nil); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tp.Document())
	var doc cube.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	back, err := doc.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(nil); err != nil {
		t.Fatal(err)
	}
	x, _ := json.Marshal(tp)
	y, _ := json.Marshal(back)
	if string(x) != string(y) {
		t.Fatalf("round trip differs:\n%s\n%s", x, y)
	}
}

func TestDocumentPeerOnOneSideAndConflicts(t *testing.T) {
	doc := cube.Document{Cubes: []cube.DocCube{
		{Name: "a", Type: "portfwd", Ports: []cube.DocPort{{Name: "p0", Peer: "b:p0"}}},
		{Name: "b", Type: "portfwd", Ports: []cube.DocPort{{Name: "p0"}}},
	}}
	tp, err := doc.Topology()
	if err != nil {
		t.Fatal(err)
	}
	if tp.Lookup("b").Port("p0").Peer != "a:p0" {
		t.Fatal("peer written on one side was not completed")
	}
	doc.Cubes = append(doc.Cubes, cube.DocCube{Name: "c", Type: "portfwd", Ports: []cube.DocPort{{Name: "p0", Peer: "b:p0"}}})
	if _, err := doc.Topology(); err == nil || !strings.Contains(err.Error(), "says it is peered with") {
		t.Fatalf("conflicting peers: %v", err)
	}
}

func TestCubeMarshalMatchesPlainEncoding(t *testing.T) {
	c := &cube.Cube{Name: "c", Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0", Peer: "x<y"}},
		Config: json.RawMessage(`{"a":1}`),
		Tables: map[string]map[string]json.RawMessage{"rules": {"b": json.RawMessage(`{"in_port":"b"}`), "a\"q": json.RawMessage(`{"in_port":"a"}`)}}}
	got, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	type plain cube.Cube
	want, _ := json.Marshal(plain(*c))
	if string(got) != string(want) {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}
