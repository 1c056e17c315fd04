package p4

import (
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// DirectMeterSetArgs are the arguments of the direct_meter_set action: the
// RFC 2698 configuration of the direct meter of one table entry (table,
// match and, for ternary/range tables, priority as in the entries table).
// Reset makes it unconfigured (everything GREEN). The configuration lives
// in the entry's map value: adding the entry again resets it.
type DirectMeterSetArgs struct {
	Table    string            `json:"table" minLength:"1" doc:"a table of the program with a direct meter (404 otherwise)"`
	Match    map[string]string `json:"match,omitempty" format:"p4-match" doc:"the entry's match, as in entries (no such entry: 404)"`
	Priority uint32            `json:"priority,omitempty"`
	CIR      uint64            `json:"cir"`
	CBurst   uint64            `json:"cburst"`
	PIR      uint64            `json:"pir"`
	PBurst   uint64            `json:"pburst"`
	Reset    bool              `json:"reset,omitempty"`
}

func directMeterSet(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*DirectMeterSetArgs)
	if a == nil || a.Table == "" {
		return nil, cube.Errorf("table", "direct_meter_set needs a table")
	}
	if err := checkForms("match", a.Match, p4info.MatchSyntax); err != nil {
		return nil, err
	}
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, err
	}
	t := prog.Model.Table(a.Table)
	if t == nil {
		return nil, cube.NotFound("table", "the program has no table %q", a.Table)
	}
	for _, k := range sortedKeys(a.Match) {
		if t.Key(k) == nil {
			return nil, cube.NotFound("match."+k, "table %s has no key field %q", t.Name, k)
		}
	}
	var ms []p4info.Match
	keys := make([]string, 0, len(a.Match))
	for k := range a.Match {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ms = append(ms, p4info.Match{Field: k, Value: a.Match[k]})
	}
	var cfg *tableruntime.MeterConfig
	if !a.Reset {
		cfg = &tableruntime.MeterConfig{CIR: a.CIR, CBurst: a.CBurst, PIR: a.PIR, PBurst: a.PBurst}
	}
	if err := prog.SetDirectMeter(t.Name, ms, a.Priority, cfg); err != nil {
		if strings.Contains(err.Error(), "no such entry") {
			return nil, cube.NotFound("match", "%v", err)
		}
		return nil, cube.Conflict("match", "%v", err)
	}
	return map[string]any{"table": t.Name, "meter": t.DirectMeter, "unit": t.MeterUnit}, nil
}
