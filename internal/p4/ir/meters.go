package ir

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// MeterCellBytes is the size of struct p4_meter (p4info.MeterLayout).
const MeterCellBytes = 64

// directMeterLayout places a table's direct meter in its values: a
// struct p4_meter after the direct counter, before the action parameters.
// Tables with entries in a map (exact, lpm, ternary/range) can have one;
// const entries and keyless tables cannot.
func directMeterLayout(src *syntax.Sources, p *Program, t *sema.Table, it *Table) []*syntax.Error {
	dm := p.MeterOf[t.DirectMeter]
	if dm == nil {
		return nil
	}
	var errs []*syntax.Error
	if dm.Table != nil {
		errs = append(errs, src.Errorf(t.Decl.Pos, "direct meter %s is already used by table %s", dm.Name, dm.Table.Name))
	}
	switch it.Kind {
	case KindHash, KindScan, KindLPM:
	default:
		errs = append(errs, src.Errorf(t.Decl.Pos, "unsupported: direct meter %s on table %s: edgenf keeps direct meters in the entries of a table's map; const entries and keyless tables have none (not yet implemented by edgenf's P4 compiler)", dm.Name, t.Name))
	}
	dm.Table = it
	it.DirectMeter = dm
	it.MeterOff = align8(it.ParamOff)
	it.ParamOff = it.MeterOff + MeterCellBytes
	return errs
}
