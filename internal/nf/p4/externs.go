package p4

// The program's counters, registers and meters: the views and actions of
// the REST API, and their typed forms for the daemon's other control planes
// (P4Runtime, through engine.Call).

import (
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// CounterValue is one index of a P4 counter.
type CounterValue struct {
	Counter string `json:"counter"`
	Index   uint32 `json:"index"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

func listCounters(h cube.Handle, c *cube.Cube) (any, error) {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, err
	}
	out := []CounterValue{}
	for _, ctr := range prog.Model.Counters {
		if ctr.Direct {
			continue
		}
		for i := 0; i < ctr.Size; i++ {
			p, b, err := prog.ReadCounter(ctr.Name, uint32(i))
			if err != nil {
				return nil, err
			}
			if p > 0 || b > 0 {
				out = append(out, CounterValue{Counter: ctr.Name, Index: uint32(i), Packets: p, Bytes: b})
			}
		}
	}
	return out, nil
}

// RegisterValue is one cell of a P4 register (Value: the cell's bits;
// int<N> registers in two's complement).
type RegisterValue struct {
	Register string `json:"register"`
	Index    uint32 `json:"index"`
	Value    uint64 `json:"value"`
}

func listRegisters(h cube.Handle, c *cube.Cube) (any, error) {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, err
	}
	out := []RegisterValue{}
	for _, r := range prog.Model.Registers {
		vals, err := prog.ReadRegister(r.Name, 0, uint32(r.Size-1))
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if v != 0 {
				out = append(out, RegisterValue{Register: r.Name, Index: uint32(i), Value: v})
			}
		}
	}
	return out, nil
}

// RegisterCells names cells of a register: Index alone one cell, Index and
// Last the range Index..Last, neither every cell.
type RegisterCells struct {
	Register string  `json:"register" minLength:"1" doc:"a register of the program (404 otherwise)"`
	Index    *uint32 `json:"index,omitempty"`
	Last     *uint32 `json:"last,omitempty"`
}

// resolve finds the register and the range of cells, checked against its
// size (an index past the end is an error here: the API never writes out of
// range, whatever the P4 program does with such indexes).
func (a *RegisterCells) resolve(h cube.Handle, c *cube.Cube) (*tableruntime.Program, *p4info.RegisterLayout, uint32, uint32, error) {
	if a == nil || a.Register == "" {
		return nil, nil, 0, 0, cube.Errorf("register", "a register name is required")
	}
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	r := prog.Model.Register(a.Register)
	if r == nil {
		return nil, nil, 0, 0, cube.NotFound("register", "no register %q", a.Register)
	}
	lo, hi := uint32(0), uint32(r.Size-1)
	switch {
	case a.Index != nil && a.Last != nil:
		lo, hi = *a.Index, *a.Last
	case a.Index != nil:
		lo, hi = *a.Index, *a.Index
	case a.Last != nil:
		return nil, nil, 0, 0, cube.Errorf("last", "last needs index (the first cell of the range)")
	}
	if lo > hi {
		return nil, nil, 0, 0, cube.Unprocessable("last", "range %d..%d is empty", lo, hi)
	}
	if uint64(hi) >= uint64(r.Size) {
		return nil, nil, 0, 0, cube.Conflict("index", "register %s has %d cells (0..%d), not %d", r.Name, r.Size, r.Size-1, hi)
	}
	return prog, r, lo, hi, nil
}

// RegisterWriteArgs are the arguments of the register_write action: the
// cells (every cell when index is omitted) and Value, a number (decimal,
// 0x hex, negative for int<N>), MAC or IP address.
type RegisterWriteArgs struct {
	RegisterCells
	Value string `json:"value" format:"p4-value"`
}

func registerWrite(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*RegisterWriteArgs)
	if a == nil {
		return nil, cube.Errorf("register", "a register name is required")
	}
	if err := checkForms("", map[string]string{"value": a.Value}, p4info.ValueSyntax); err != nil {
		return nil, err
	}
	_, r, lo, hi, err := a.resolve(h, c)
	if err != nil {
		return nil, err
	}
	v, err := p4info.ParseValue(a.Value, r.Width)
	if err != nil {
		return nil, cube.Conflict("value", "register %s: %v", r.Name, err)
	}
	if err := WriteRegister(h, c, a.RegisterCells, v.Uint64()); err != nil {
		return nil, err
	}
	return map[string]any{"register": r.Name, "written": hi - lo + 1}, nil
}

// WriteRegister sets the cells of a range to v, which must fit the
// register's width (the register_write action, typed: engine.Call).
func WriteRegister(h cube.Handle, c *cube.Cube, cells RegisterCells, v uint64) error {
	prog, r, lo, hi, err := cells.resolve(h, c)
	if err != nil {
		return err
	}
	if r.Width < 64 && v>>r.Width != 0 {
		return cube.Errorf("value", "register %s: 0x%x does not fit in %d bits", r.Name, v, r.Width)
	}
	return prog.WriteRegister(r.Name, lo, hi, v)
}

// registerReset sets the cells of a range (every cell when index is
// omitted) back to the register's initial value (0 without one).
func registerReset(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*RegisterCells)
	prog, r, lo, hi, err := a.resolve(h, c)
	if err != nil {
		return nil, err
	}
	if err := prog.ResetRegister(r.Name, lo, hi); err != nil {
		return nil, err
	}
	return map[string]any{"register": r.Name, "reset": hi - lo + 1}, nil
}

// registerRead returns the cells of a range, zeros included.
func registerRead(h cube.Handle, c *cube.Cube, args any) (any, error) {
	return ReadRegister(h, c, *args.(*RegisterCells))
}

// ReadRegister returns the cells of a range, zeros included (the
// register_read action, typed: engine.Call).
func ReadRegister(h cube.Handle, c *cube.Cube, cells RegisterCells) ([]RegisterValue, error) {
	prog, r, lo, hi, err := cells.resolve(h, c)
	if err != nil {
		return nil, err
	}
	vals, err := prog.ReadRegister(r.Name, lo, hi)
	if err != nil {
		return nil, err
	}
	out := make([]RegisterValue, len(vals))
	for i, v := range vals {
		out[i] = RegisterValue{Register: r.Name, Index: lo + uint32(i), Value: v}
	}
	return out, nil
}

// MeterSetArgs are the arguments of the meter_set action: an RFC 2698
// configuration (rates in the meter's units per second, bursts in units)
// for one cell, or every cell when Index is omitted; Reset makes the cells
// unconfigured (everything GREEN).
type MeterSetArgs struct {
	Meter  string  `json:"meter" minLength:"1" doc:"a meter of the program (404 otherwise)"`
	Index  *uint32 `json:"index,omitempty"`
	CIR    uint64  `json:"cir"`
	CBurst uint64  `json:"cburst"`
	PIR    uint64  `json:"pir"`
	PBurst uint64  `json:"pburst"`
	Reset  bool    `json:"reset,omitempty"`
}

func meterSet(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*MeterSetArgs)
	if a == nil || a.Meter == "" {
		return nil, cube.Errorf("meter", "meter_set needs a meter")
	}
	n, err := SetMeter(h, c, *a)
	if err != nil {
		return nil, err
	}
	return map[string]any{"meter": a.Meter, "written": n}, nil
}

// SetMeter configures the cells a names and returns how many (the
// meter_set action, typed: engine.Call).
func SetMeter(h cube.Handle, c *cube.Cube, a MeterSetArgs) (uint32, error) {
	if a.Meter == "" {
		return 0, cube.Errorf("meter", "meter_set needs a meter")
	}
	prog, err := runtimeOf(h, c)
	if err != nil {
		return 0, err
	}
	me := prog.Model.Meter(a.Meter)
	if me == nil {
		return 0, cube.NotFound("meter", "the program has no meter %q", a.Meter)
	}
	lo, hi := uint32(0), uint32(me.Size-1)
	if a.Index != nil {
		if lo, hi = *a.Index, *a.Index; int64(hi) >= int64(me.Size) {
			return 0, cube.Conflict("index", "meter %s has %d cells (0..%d), not %d", me.Name, me.Size, me.Size-1, hi)
		}
	}
	var cfg *tableruntime.MeterConfig
	if !a.Reset {
		cfg = &tableruntime.MeterConfig{CIR: a.CIR, CBurst: a.CBurst, PIR: a.PIR, PBurst: a.PBurst}
	}
	if err := prog.SetMeter(me.Name, lo, hi, cfg); err != nil {
		return 0, err
	}
	return hi - lo + 1, nil
}

// MeterValue is a configured meter cell.
type MeterValue struct {
	Meter string `json:"meter"`
	Index uint32 `json:"index"`
	Unit  string `json:"unit"`
	tableruntime.MeterConfig
}

func listMeters(h cube.Handle, c *cube.Cube) (any, error) { return Meters(h, c) }

// Meters returns the configured cells of every meter (the meters view,
// typed: engine.Call).
func Meters(h cube.Handle, c *cube.Cube) ([]MeterValue, error) {
	prog, err := runtimeOf(h, c)
	if err != nil {
		return nil, err
	}
	out := []MeterValue{}
	for _, me := range prog.Model.Meters {
		for i := 0; i < me.Size; i++ {
			cfg, err := prog.ReadMeter(me.Name, uint32(i))
			if err != nil {
				return nil, err
			}
			if cfg != nil {
				out = append(out, MeterValue{Meter: me.Name, Index: uint32(i), Unit: me.Unit, MeterConfig: *cfg})
			}
		}
	}
	return out, nil
}
