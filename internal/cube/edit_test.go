package cube_test

import (
	"encoding/json"
	"errors"
	"fmt"
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

// TestTopologyJSONAsBefore: a topology is written byte for byte as when
// its cubes were a plain exported field (state files, journals and API
// answers unchanged, by value or by pointer, indented or not), and what
// was written then reads back the same.
func TestTopologyJSONAsBefore(t *testing.T) {
	tp := chain(t)
	tp.Attachments["a:p0"] = []string{"m<1>"}
	type before struct {
		Cubes       map[string]*cube.Cube `json:"cubes"`
		Attachments map[string][]string   `json:"attachments,omitempty"`
	}
	old := before{Attachments: tp.Attachments, Cubes: map[string]*cube.Cube{}}
	for name, c := range tp.Cubes() {
		old.Cubes[name] = c
	}
	type file struct {
		Gen  int            `json:"gen"`
		Topo cube.Topology  `json:"topology"`
		Ptr  *cube.Topology `json:"ptr"`
	}
	type oldFile struct {
		Gen  int     `json:"gen"`
		Topo before  `json:"topology"`
		Ptr  *before `json:"ptr"`
	}
	for _, empty := range []bool{false, true} {
		nt, ot := tp, old
		if empty {
			nt, ot = cube.NewTopology(), before{Cubes: map[string]*cube.Cube{}}
		}
		got, err := json.MarshalIndent(file{1, *nt, nt}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.MarshalIndent(oldFile{1, ot, &ot}, "", "  ")
		if string(got) != string(want) {
			t.Fatalf("empty %v:\n got %s\nwant %s", empty, got, want)
		}
		var back file
		if err := json.Unmarshal(want, &back); err != nil {
			t.Fatal(err)
		}
		if back.Topo.NumCubes() != nt.NumCubes() || !reflect.DeepEqual(back.Topo.Attachments, back.Ptr.Attachments) {
			t.Fatalf("empty %v: read back %d cubes, attachments %v and %v", empty, back.Topo.NumCubes(), back.Topo.Attachments, back.Ptr.Attachments)
		}
		for name, c := range nt.Cubes() {
			if b := back.Ptr.Lookup(name); b == nil || !b.Equal(c) {
				t.Fatalf("empty %v: cube %s read back as %+v", empty, name, b)
			}
		}
	}
}

// peerIndex is a system that knows the peers of interfaces in a topology.
type peerIndex map[string]string

func (peerIndex) IfaceExists(string) bool { return true }
func (x peerIndex) IfacePeer(iface string) (string, bool) {
	p, ok := x[iface]
	return p, ok
}

// TestValidateAsksThePeerIndex: with a system that indexes the interfaces'
// peers (the engine), validating a change walks no cube, and judges as the
// walk would: an interface an unchanged cube holds is refused to a changed
// one, one a changed cube let go of is free.
func TestValidateAsksThePeerIndex(t *testing.T) {
	prev := cube.NewTopology()
	for i := range 50 {
		c := &cube.Cube{Name: fmt.Sprintf("c%d", i), Type: "portfwd", Hook: "xdp", Ports: []cube.Port{{Name: "p0", Peer: fmt.Sprintf("veth%d", i)}}}
		prev.Put(c)
	}
	index := peerIndex{}
	for i := range 50 {
		index[fmt.Sprintf("veth%d", i)] = fmt.Sprintf("c%d:p0", i)
	}
	walk := peerIndex(nil) // a System without IfacePeer: the walk
	type onlyExists struct{ cube.System }
	for _, c := range []struct {
		what string
		edit func(t *cube.Topology)
		want string // "": valid
	}{
		{"an interface an unchanged cube holds", func(t *cube.Topology) {
			c, _ := t.Edit("c1")
			c.Ports[0].Peer = "veth7"
		}, "interface veth7 is already the peer of c7:p0"},
		{"an interface a changed cube let go of", func(t *cube.Topology) {
			c, _ := t.Edit("c1")
			c.Ports[0].Peer = "veth2"
			c, _ = t.Edit("c2")
			c.Ports[0].Peer = "veth-new"
		}, ""},
		{"its own interface, the cube's rules changed", func(t *cube.Topology) {
			t.PutEntry("c3", "rules", json.RawMessage(`{"in_port":"p0","out_port":"p0"}`))
		}, ""},
	} {
		for _, sys := range []cube.System{index, onlyExists{walk}} {
			next := prev.Fork()
			c.edit(next)
			changed, _ := next.Touched()
			before := cube.CubeWalks()
			err := next.ValidateChanged(prev, changed, sys)
			if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && !strings.Contains(got, c.want)) {
				t.Errorf("%s (%T): %v, want %q", c.what, sys, err, c.want)
			}
			if _, indexed := sys.(cube.PeerIndex); indexed && cube.CubeWalks() != before {
				t.Errorf("%s: validation walked the cubes with a peer index", c.what)
			}
		}
	}
}
