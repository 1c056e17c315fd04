package p4

// What the API's document says of a p4 cube: the forms of P4 values. The
// names (tables, actions, key fields, parameters, registers, meters) and
// the widths are the program's, so a value of one of these forms that names
// what the program lacks is 404, and one that does not fit its field (too
// wide, the wrong match kind) is 409, as a clash with the cube's program;
// a program that does not compile is 422.

import (
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/schema"
)

// The forms p4info.ParseValue and the match parser read, for the document
// (a subset where they are lenient: no spaces, no sign but '-'); the
// checks are theirs (p4info.ValueSyntax, p4info.MatchSyntax).
const (
	p4Number = `-?(0[xX]_*[0-9A-Fa-f][0-9A-Fa-f_]*|0[bB]_*[01][01_]*|0[oO]_*[0-7][0-7_]*|0[dD]_*[0-9][0-9_]*|[0-9][0-9_]*)`
	p4MAC    = `[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}`
	// a field reference of a learning rule: the digest's field
	p4Ref = `\$[A-Za-z_][A-Za-z0-9_.]*`
	// an idle timeout of 1 s or more, up to 999999 h
	p4Duration = `([1-9][0-9]{0,5}h)([1-9][0-9]{0,5}m)?([1-9][0-9]{0,5}s)?|([1-9][0-9]{0,5}m)([1-9][0-9]{0,5}s)?|[1-9][0-9]{0,5}s`
)

var (
	p4Value = "(" + p4MAC + "|" + schema.IPv4 + "|" + schema.IPv6 + "|" + p4Number + ")"
	p4Match = `\*|_|` + p4Value + `(/[0-9]{1,3})?|` + p4Value + `&&&` + p4Value + `|0x[0-9A-Fa-f]*\*[0-9A-Fa-f*]*|` +
		p4Value + `(->|\.\.)` + p4Value
)

func init() {
	for name, f := range map[string]schema.Format{
		"p4-value": {Pattern: schema.Anchored(p4Value),
			Doc: "a value: a number (decimal; 0x, 0b, 0o prefixed; '_' between digits; negative for int<N>), a MAC, an IPv4 or IPv6 address; it must fit its field (409 otherwise)"},
		"p4-match": {Pattern: schema.Anchored(p4Match),
			Doc: "a match: a value, value/length (lpm), value&&&mask or 0x1*2* (ternary), lo->hi or lo..hi (range), * or _ (any); of the field's kind and width (409 otherwise)"},
		"p4-learn-value": {Pattern: schema.Anchored(p4Value + "|" + p4Ref),
			Doc: "a value, or $field: the digest's field"},
		"p4-learn-match": {Pattern: schema.Anchored(p4Match + "|" + p4Ref),
			Doc: "a match, or $field: the digest's field"},
		"p4-duration": {Pattern: schema.Anchored(p4Duration),
			Doc: "an idle timeout of 1s or more, e.g. 30s, 5m, 1h30m; the table needs support_timeout (409 otherwise)"},
	} {
		schema.Register(name, f)
	}
}

// checkForms refuses values no P4 field takes, whatever its match kind and
// width (400); one of some field's form that does not fit the program's is
// refused once the program is looked at (409).
func checkForms(field string, m map[string]string, syntax func(string) error) error {
	for _, k := range sortedKeys(m) {
		if err := syntax(m[k]); err != nil {
			return cube.Errorf(field+"."+k, "%v", err)
		}
	}
	return nil
}

// orField also takes a learning rule's reference to a digest's field,
// "$field".
func orField(syntax func(string) error) func(string) error {
	return func(s string) error {
		if strings.HasPrefix(s, "$") {
			return nil
		}
		return syntax(s)
	}
}

// namesIn refuses an action, key fields or parameters the table lacks
// (404).
func namesIn(t *p4info.TableLayout, action string, match, params map[string]string) error {
	a := t.Action(action)
	if a == nil {
		var names []string
		for _, x := range t.Actions {
			names = append(names, x.Name)
		}
		return cube.NotFound("action", "table %s has no action %q (actions: %v)", t.Name, action, names)
	}
	for _, k := range sortedKeys(match) {
		if t.Key(k) == nil {
			return cube.NotFound("match."+k, "table %s has no key field %q", t.Name, k)
		}
	}
	for _, k := range sortedKeys(params) {
		found := false
		for _, p := range a.Params {
			found = found || p.Name == k
		}
		if !found {
			return cube.NotFound("params."+k, "action %s has no parameter %q", a.Name, k)
		}
	}
	return nil
}

// RefineSchema: the CPU port is 64..510 (0: 255).
func (*Settings) RefineSchema(s *schema.Schema) {
	s.Properties["cpu_port"] = &schema.Schema{Description: "the CPU port: 64..510 (0 or absent: 255)", OneOf: []*schema.Schema{
		{Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(0)},
		{Type: "integer", Minimum: schema.Num(64), Maximum: schema.Num(510)}}}
}

// RefineSchema: a frame the slow path can inject, in hex digits (no
// "0x", no spaces: at most twice its bytes).
func (*PacketOutArgs) RefineSchema(s *schema.Schema) {
	s.Properties["frame"].MaxLength = schema.Int(2 * datapath.MaxInjectFrame)
}

// RefineSchema: last needs index.
func (*RegisterCells) RefineSchema(s *schema.Schema) { lastNeedsIndex(s) }

// RefineSchema: last needs index.
func (*RegisterWriteArgs) RefineSchema(s *schema.Schema) { lastNeedsIndex(s) }

func lastNeedsIndex(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{
		schema.Branch(nil, map[string]*schema.Schema{"last": schema.Absent()}),
		schema.Branch([]string{"index"}, nil),
	}
}

// RefineSchema: a session copies out of a port or to a multicast group.
func (*CloneSession) RefineSchema(s *schema.Schema) {
	s.AnyOf = []*schema.Schema{
		schema.Branch([]string{"port"}, map[string]*schema.Schema{"mcast_group": {Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(0)}}),
		schema.Branch([]string{"mcast_group"}, map[string]*schema.Schema{"port": schema.Absent(),
			"mcast_group": {Type: "integer", Minimum: schema.Num(1), Maximum: schema.Num(65535)}}),
	}
	s.Properties["port"] = replicaPort()
	s.Properties["truncate"] = &schema.Schema{Description: "cut copies to this many bytes, at least an Ethernet header (0 or absent: whole)", OneOf: []*schema.Schema{
		{Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(0)},
		{Type: "integer", Minimum: schema.Num(14), Maximum: schema.Num(1<<32 - 1)}}}
}

// replicaPort is a port copies go to: a cube port or the CPU port.
func replicaPort() *schema.Schema {
	return &schema.Schema{Description: "a cube port, 0..63, or the CPU port, 510", OneOf: []*schema.Schema{
		{Type: "integer", Minimum: schema.Num(0), Maximum: schema.Num(63)},
		{Type: "integer", Minimum: schema.Num(510), Maximum: schema.Num(510)}}}
}

// RefineSchema: replicas go to cube ports or the CPU port, each once (422
// otherwise).
func (*McastGroup) RefineSchema(s *schema.Schema) {
	s.Properties["replicas"].Items.Properties["port"] = replicaPort()
}
