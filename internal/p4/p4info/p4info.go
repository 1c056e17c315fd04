// Package p4info describes a compiled P4 program for the control plane: a
// P4Info-shaped model (tables, match fields, actions, params, counters with
// p4c-style ids) plus edgenf's map layouts, and encodes table entries given
// as strings into the BPF map key and value bytes.
package p4info

import (
	"encoding/json"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/ir"
	"github.com/edgenf/edgenf/internal/p4/sema"
)

// P4Info mirrors p4.config.v1.P4Info in its JSON form (protobuf JSON names;
// int64 fields as strings). Edgenf holds edgenf's map layouts; it is not part
// of P4Info and is left out by MarshalP4Info.
type P4Info struct {
	PkgInfo        PkgInfo          `json:"pkgInfo"`
	Tables         []*Table         `json:"tables,omitempty"`
	Actions        []*Action        `json:"actions,omitempty"`
	ActionProfiles []*ActionProfile `json:"actionProfiles,omitempty"` // actprof.go
	Counters       []*Counter       `json:"counters,omitempty"`
	DirectCounters []*DirectCounter `json:"directCounters,omitempty"`
	ValueSets      []*ValueSet      `json:"valueSets,omitempty"`
	Registers      []*Register      `json:"registers,omitempty"`
	Meters         []*Meter         `json:"meters,omitempty"`
	DirectMeters   []*DirectMeter   `json:"directMeters,omitempty"`
	// slowpath.go: digests, packet_in/packet_out headers, their types
	ControllerPacketMetadata []*ControllerPacketMetadata `json:"controllerPacketMetadata,omitempty"`
	Digests                  []*Digest                   `json:"digests,omitempty"`
	TypeInfo                 *TypeInfo                   `json:"typeInfo,omitempty"`
	Edgenf                   *Runtime                    `json:"edgenf,omitempty"`
}

type PkgInfo struct {
	Arch string `json:"arch"`
	Name string `json:"name,omitempty"`
}

type Preamble struct {
	ID          uint32   `json:"id"`
	Name        string   `json:"name"`
	Alias       string   `json:"alias"`
	Annotations []string `json:"annotations,omitempty"`
}

type MatchField struct {
	ID        uint32 `json:"id"`
	Name      string `json:"name"`
	Bitwidth  int    `json:"bitwidth"`
	MatchType string `json:"matchType"`
}

type ActionRef struct {
	ID    uint32 `json:"id"`
	Scope string `json:"scope,omitempty"` // TABLE_AND_DEFAULT (omitted), TABLE_ONLY, DEFAULT_ONLY
}

type Table struct {
	Preamble             Preamble     `json:"preamble"`
	MatchFields          []MatchField `json:"matchFields,omitempty"`
	ActionRefs           []ActionRef  `json:"actionRefs"`
	ConstDefaultActionID uint32       `json:"constDefaultActionId,omitempty"`
	ImplementationID     uint32       `json:"implementationId,omitempty"` // its action profile
	DirectResourceIDs    []uint32     `json:"directResourceIds,omitempty"`
	Size                 string       `json:"size"`
	IsConstTable         bool         `json:"isConstTable,omitempty"`
	IdleTimeoutBehavior  string       `json:"idleTimeoutBehavior,omitempty"` // NOTIFY_CONTROL with support_timeout
}

type Param struct {
	ID       uint32 `json:"id"`
	Name     string `json:"name"`
	Bitwidth int    `json:"bitwidth"`
}

type Action struct {
	Preamble Preamble `json:"preamble"`
	Params   []Param  `json:"params,omitempty"`
}

type CounterSpec struct {
	Unit string `json:"unit"` // BYTES, PACKETS, BOTH
}

type Counter struct {
	Preamble Preamble    `json:"preamble"`
	Spec     CounterSpec `json:"spec"`
	Size     string      `json:"size"`
}

type DirectCounter struct {
	Preamble      Preamble    `json:"preamble"`
	Spec          CounterSpec `json:"spec"`
	DirectTableID uint32      `json:"directTableId"`
}

type ValueSet struct {
	Preamble Preamble     `json:"preamble"`
	Match    []MatchField `json:"match"`
	Size     int          `json:"size"`
}

// Runtime is edgenf's part of the model: which BPF map holds what, and the
// byte layouts needed to write entries. See ir.Table for the layouts.
type Runtime struct {
	Arch     string           `json:"arch"`
	CPUPort  int              `json:"cpuPort"`  // egress_spec that punts to the slow path
	DropPort int              `json:"dropPort"` // egress_spec that drops
	Tables   []*TableLayout   `json:"tables"`
	Counters []*CounterLayout `json:"counters,omitempty"`
	// Registers: ARRAY maps (shared by all CPUs) of Size u64 cells, host order.
	Registers []*RegisterLayout `json:"registers,omitempty"`
	// Meters: ARRAY maps (shared by all CPUs) of struct p4_meter (MeterLayout).
	Meters []*MeterLayout `json:"meters,omitempty"`
	// ValueSets: ARRAY maps of {u64 value, u64 mask, u32 valid, u32 reserved}, host order.
	ValueSets []*ValueSetLayout `json:"valueSets,omitempty"`
	// Profiles: action profiles and selectors (actprof.go).
	Profiles []*ProfileLayout `json:"profiles,omitempty"`
	// SlowPath: digests, log messages, controller headers (slowpath.go).
	SlowPath *SlowPathLayout `json:"slowPath,omitempty"`
}

// Register mirrors p4.config.v1.Register.
type Register struct {
	Preamble Preamble     `json:"preamble"`
	TypeSpec DataTypeSpec `json:"typeSpec"`
	Size     int          `json:"size"`
}

// DataTypeSpec is the subset of p4.config.v1.P4DataTypeSpec edgenf produces.
type DataTypeSpec struct {
	Bitstring *BitstringSpec `json:"bitstring,omitempty"`
	Bool      *struct{}      `json:"bool,omitempty"`
}

// BitstringSpec is p4.config.v1.P4BitstringLikeTypeSpec.
type BitstringSpec struct {
	Bit *BitwidthSpec `json:"bit,omitempty"`
	Int *BitwidthSpec `json:"int,omitempty"`
}

// BitwidthSpec is p4.config.v1.P4BitTypeSpec / P4IntTypeSpec.
type BitwidthSpec struct {
	Bitwidth int `json:"bitwidth"`
}

// RegisterLayout is a register's map: BPF_MAP_TYPE_ARRAY of Size u64 cells
// (host order, value right-aligned in Width bits; Signed values are stored
// in two's complement, Width bits). The array is shared by all CPUs.
type RegisterLayout struct {
	Name   string `json:"name"`
	ID     uint32 `json:"id"`
	Map    string `json:"map"`
	Size   int    `json:"size"`
	Width  int    `json:"width"`
	Signed bool   `json:"signed,omitempty"`
	Bool   bool   `json:"bool,omitempty"`
	// Init is PSA's initial value; the map holds each cell XOR Init
	// (ir.Register).
	Init uint64 `json:"init,omitempty"`
}

// Meter mirrors p4.config.v1.Meter.
type Meter struct {
	Preamble Preamble  `json:"preamble"`
	Spec     MeterSpec `json:"spec"`
	Size     string    `json:"size"`
}

// MeterSpec mirrors p4.config.v1.MeterSpec.
type MeterSpec struct {
	Unit string `json:"unit"` // BYTES or PACKETS
}

// MeterLayout is a meter's map: BPF_MAP_TYPE_ARRAY of Size struct p4_meter
// (host order): [0:8] cir, [8:16] cbs, [16:24] pir, [24:32] pbs (rates in
// units per second, bursts in units), [32:40] committed and [40:48] peak
// tokens (units x 1e9), [48:56] time of the last update (ns), [56:60]
// flags: bit 0 configured (0: everything is GREEN), bit 1 set by the
// datapath while it updates the cell; [60:64] a bpf_spin_lock (the control
// plane's whole-cell writes).
type MeterLayout struct {
	Name string `json:"name"`
	ID   uint32 `json:"id"`
	Map  string `json:"map"`
	Size int    `json:"size"`
	Unit string `json:"unit"` // packets or bytes
}

// Meter returns a meter by full name or alias.
func (r *Runtime) Meter(name string) *MeterLayout {
	for _, m := range r.Meters {
		if m.Name == name {
			return m
		}
	}
	for _, m := range r.Meters {
		if alias(m.Name) == name || strings.HasSuffix(m.Name, "."+name) {
			return m
		}
	}
	return nil
}

// Register returns a register by full name or alias.
func (r *Runtime) Register(name string) *RegisterLayout {
	for _, g := range r.Registers {
		if g.Name == name {
			return g
		}
	}
	for _, g := range r.Registers {
		if alias(g.Name) == name || strings.HasSuffix(g.Name, "."+name) {
			return g
		}
	}
	return nil
}

// ValueSetLayout is a parser value_set's map.
type ValueSetLayout struct {
	Name  string `json:"name"`
	ID    uint32 `json:"id"`
	Map   string `json:"map"`
	Size  int    `json:"size"`
	Width int    `json:"width"`
}

// TableLayout describes a table's maps.
type TableLayout struct {
	Name             string          `json:"name"`
	ID               uint32          `json:"id"`
	Kind             string          `json:"kind"` // hash, lpm, scan, const, keyless
	Map              string          `json:"map,omitempty"`
	CountMap         string          `json:"countMap,omitempty"` // scan: u32 number of slots to scan
	DefaultMap       string          `json:"defaultMap"`
	Size             int             `json:"size"`
	KeyBytes         int             `json:"keyBytes"`
	Keys             []*KeyLayout    `json:"keys,omitempty"` // map order
	ValueBytes       int             `json:"valueBytes"`
	ParamOffset      int             `json:"paramOffset"`
	CounterOffset    int             `json:"counterOffset"`         // -1: no direct counter
	MeterOffset      int             `json:"meterOffset,omitempty"` // direct meter's struct p4_meter (MeterLayout); 0: none
	IdleOffset       int             `json:"idleOffset,omitempty"`  // support_timeout: __u64 bpf_ktime_get_ns() of the last hit; 0: none
	DirectMeter      string          `json:"directMeter,omitempty"`
	MeterUnit        string          `json:"meterUnit,omitempty"` // packets or bytes
	EntryBytes       int             `json:"entryBytes,omitempty"`
	EntryRangeOffset int             `json:"entryRangeOffset,omitempty"`
	EntryValueOffset int             `json:"entryValueOffset,omitempty"`
	Actions          []*ActionLayout `json:"actions"`
	DefaultAction    string          `json:"defaultAction,omitempty"`
	DefaultArgs      []string        `json:"defaultArgs,omitempty"` // compiled default's arguments (decimal)
	ConstDefault     bool            `json:"constDefault,omitempty"`
	// Profile: the action profile or selector implementing the table
	// (actprof.go); its values then hold references (ir.ActionProfile).
	Profile string `json:"profile,omitempty"`
}

// KeyLayout is one key field.
type KeyLayout struct {
	Name        string `json:"name"`
	ID          uint32 `json:"id"`
	MatchKind   string `json:"matchKind"`
	Width       int    `json:"width"`
	Offset      int    `json:"offset"`
	Size        int    `json:"size"`
	RangeOffset int    `json:"rangeOffset,omitempty"`
}

// ActionLayout is an action usable in a table.
type ActionLayout struct {
	Name        string         `json:"name"`
	ID          uint32         `json:"id"`
	Params      []*ParamLayout `json:"params,omitempty"`
	DefaultOnly bool           `json:"defaultOnly,omitempty"`
	TableOnly   bool           `json:"tableOnly,omitempty"`
}

// ParamLayout is one action parameter in the value's parameter area.
type ParamLayout struct {
	Name   string `json:"name"`
	ID     uint32 `json:"id"`
	Width  int    `json:"width"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
}

// CounterLayout is an indirect counter's map (PERCPU_ARRAY of {u64 packets, u64 bytes})
// or a direct counter (in its table's values at CounterOffset).
type CounterLayout struct {
	Name   string `json:"name"`
	ID     uint32 `json:"id"`
	Map    string `json:"map,omitempty"`
	Size   int    `json:"size,omitempty"`
	Unit   string `json:"unit"`
	Direct bool   `json:"direct,omitempty"`
	Table  string `json:"table,omitempty"`
}

func alias(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[i+1:]
	}
	return full
}

func matchType(k string) string {
	switch k {
	case "exact":
		return "EXACT"
	case "lpm":
		return "LPM"
	case "ternary":
		return "TERNARY"
	case "range":
		return "RANGE"
	case "optional":
		return "OPTIONAL"
	}
	return strings.ToUpper(k)
}

func unit(u string) string {
	switch u {
	case "packets":
		return "PACKETS"
	case "bytes":
		return "BYTES"
	}
	return "BOTH"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FromIR builds the model of a lowered program.
func FromIR(p *ir.Program) *P4Info {
	m := &P4Info{PkgInfo: PkgInfo{Arch: p.Arch}}
	rt := &Runtime{Arch: p.Arch, CPUPort: 510, DropPort: 511}
	m.Edgenf = rt
	for _, a := range p.Actions {
		pa := &Action{Preamble: Preamble{ID: a.ID, Name: a.Name, Alias: alias(a.Name)}}
		for _, pr := range a.Params {
			pa.Params = append(pa.Params, Param{ID: pr.ID, Name: pr.Name, Bitwidth: pr.Width})
		}
		m.Actions = append(m.Actions, pa)
	}
	for _, t := range p.Tables {
		pt := &Table{Preamble: Preamble{ID: t.ID, Name: t.Name, Alias: alias(t.Name)}, Size: itoa(t.Size), IsConstTable: t.Kind == ir.KindConst}
		for _, k := range t.KeysDecl {
			pt.MatchFields = append(pt.MatchFields, MatchField{ID: k.ID, Name: k.Name, Bitwidth: k.Width, MatchType: matchType(k.MatchKind)})
		}
		tl := &TableLayout{Name: t.Name, ID: t.ID, Kind: t.Kind, Map: t.MapName, CountMap: t.CountMapName, DefaultMap: t.DefaultMapName, Size: t.Size,
			KeyBytes: t.KeyBytes, ValueBytes: t.ValueBytes, ParamOffset: t.ParamOff, CounterOffset: t.CounterOff,
			EntryBytes: t.EntryBytes, EntryRangeOffset: t.EntryRangeOff, EntryValueOffset: t.EntryValueOff, ConstDefault: t.ConstDefault}
		if dm := t.DirectMeter; dm != nil {
			tl.MeterOffset, tl.DirectMeter, tl.MeterUnit = t.MeterOff, dm.Name, dm.Unit
		}
		if t.IdleOff > 0 {
			tl.IdleOffset = t.IdleOff
			pt.IdleTimeoutBehavior = "NOTIFY_CONTROL"
		}
		for _, k := range t.Keys {
			tl.Keys = append(tl.Keys, &KeyLayout{Name: k.Name, ID: k.ID, MatchKind: k.MatchKind, Width: k.Width, Offset: k.Offset, Size: k.Size, RangeOffset: k.RangeOff})
		}
		for _, ta := range t.Actions {
			ref := ActionRef{ID: ta.Action.ID}
			if ta.DefaultOnly {
				ref.Scope = "DEFAULT_ONLY"
			} else if ta.TableOnly {
				ref.Scope = "TABLE_ONLY"
			}
			pt.ActionRefs = append(pt.ActionRefs, ref)
			al := &ActionLayout{Name: ta.Action.Name, ID: ta.Action.ID, DefaultOnly: ta.DefaultOnly, TableOnly: ta.TableOnly}
			for _, pr := range ta.Action.Params {
				al.Params = append(al.Params, &ParamLayout{Name: pr.Name, ID: pr.ID, Width: pr.Width, Offset: pr.Offset, Size: pr.Size})
			}
			tl.Actions = append(tl.Actions, al)
		}
		if t.Default != nil {
			tl.DefaultAction = p.ActionOf[t.Default.Action].Name
			for _, a := range t.Default.Args {
				tl.DefaultArgs = append(tl.DefaultArgs, a.String())
			}
			if t.ConstDefault {
				pt.ConstDefaultActionID = p.ActionOf[t.Default.Action].ID
			}
		}
		if t.DirectCounter != nil {
			pt.DirectResourceIDs = append(pt.DirectResourceIDs, t.DirectCounter.ID)
		}
		m.Tables = append(m.Tables, pt)
		rt.Tables = append(rt.Tables, tl)
	}
	for _, c := range p.Counters {
		m.Counters = append(m.Counters, &Counter{Preamble: Preamble{ID: c.ID, Name: c.Name, Alias: alias(c.Name)}, Spec: CounterSpec{Unit: unit(c.Unit)}, Size: itoa(c.Size)})
		rt.Counters = append(rt.Counters, &CounterLayout{Name: c.Name, ID: c.ID, Map: c.MapName, Size: c.Size, Unit: c.Unit})
	}
	for _, c := range p.DirectCounters {
		dc := &DirectCounter{Preamble: Preamble{ID: c.ID, Name: c.Name, Alias: alias(c.Name)}, Spec: CounterSpec{Unit: unit(c.Unit)}}
		cl := &CounterLayout{Name: c.Name, ID: c.ID, Unit: c.Unit, Direct: true}
		if c.Table != nil {
			dc.DirectTableID = c.Table.ID
			cl.Table = c.Table.Name
		}
		m.DirectCounters = append(m.DirectCounters, dc)
		rt.Counters = append(rt.Counters, cl)
	}
	for _, r := range p.Registers {
		pr := &Register{Preamble: Preamble{ID: r.ID, Name: r.Name, Alias: alias(r.Name)}, Size: r.Size}
		isBool := false
		if len(r.Ent.TypeArgs) > 0 {
			_, isBool = r.Ent.TypeArgs[0].(*sema.Bool)
		}
		switch {
		case isBool:
			pr.TypeSpec.Bool = &struct{}{}
		case r.Signed:
			pr.TypeSpec.Bitstring = &BitstringSpec{Int: &BitwidthSpec{Bitwidth: r.Width}}
		default:
			pr.TypeSpec.Bitstring = &BitstringSpec{Bit: &BitwidthSpec{Bitwidth: r.Width}}
		}
		m.Registers = append(m.Registers, pr)
		rt.Registers = append(rt.Registers, &RegisterLayout{Name: r.Name, ID: r.ID, Map: r.MapName, Size: r.Size, Width: r.Width, Signed: r.Signed, Bool: isBool, Init: r.Init})
	}
	for _, me := range p.Meters {
		m.Meters = append(m.Meters, &Meter{Preamble: Preamble{ID: me.ID, Name: me.Name, Alias: alias(me.Name)}, Spec: MeterSpec{Unit: strings.ToUpper(me.Unit)}, Size: itoa(me.Size)})
		rt.Meters = append(rt.Meters, &MeterLayout{Name: me.Name, ID: me.ID, Map: me.MapName, Size: me.Size, Unit: me.Unit})
	}
	for _, me := range p.DirectMeters {
		dm := &DirectMeter{Preamble: Preamble{ID: me.ID, Name: me.Name, Alias: alias(me.Name)}, Spec: MeterSpec{Unit: strings.ToUpper(me.Unit)}}
		if me.Table != nil {
			dm.DirectTableID = me.Table.ID
		}
		m.DirectMeters = append(m.DirectMeters, dm)
	}
	for _, v := range p.ValueSets {
		m.ValueSets = append(m.ValueSets, &ValueSet{Preamble: Preamble{ID: v.ID, Name: v.Name, Alias: alias(v.Name)},
			Match: []MatchField{{ID: 1, Name: v.Name, Bitwidth: v.Width, MatchType: "TERNARY"}}, Size: v.Size})
		rt.ValueSets = append(rt.ValueSets, &ValueSetLayout{Name: v.Name, ID: v.ID, Map: v.MapName, Size: v.Size, Width: v.Width})
	}
	addProfiles(m, p) // actprof.go
	addSlowPath(m, p)
	return m
}

// ValueSet returns a value set by full name or alias.
func (r *Runtime) ValueSet(name string) *ValueSetLayout {
	for _, v := range r.ValueSets {
		if v.Name == name || alias(v.Name) == name || strings.HasSuffix(v.Name, "."+name) {
			return v
		}
	}
	return nil
}

// MarshalP4Info returns the P4Info JSON without edgenf's layouts.
func (m *P4Info) MarshalP4Info() ([]byte, error) {
	c := *m
	c.Edgenf = nil
	return json.MarshalIndent(&c, "", "  ")
}

// Table returns the layout of a table by full name or alias.
func (r *Runtime) Table(name string) *TableLayout {
	for _, t := range r.Tables {
		if t.Name == name {
			return t
		}
	}
	var found *TableLayout
	for _, t := range r.Tables {
		if alias(t.Name) == name || strings.HasSuffix(t.Name, "."+name) {
			if found != nil {
				return nil // ambiguous
			}
			found = t
		}
	}
	return found
}

// Counter returns an indirect or direct counter by full name or alias.
func (r *Runtime) Counter(name string) *CounterLayout {
	for _, c := range r.Counters {
		if c.Name == name {
			return c
		}
	}
	for _, c := range r.Counters {
		if alias(c.Name) == name || strings.HasSuffix(c.Name, "."+name) {
			return c
		}
	}
	return nil
}

// Action returns a table's action by full name or alias.
func (t *TableLayout) Action(name string) *ActionLayout {
	for _, a := range t.Actions {
		if a.Name == name {
			return a
		}
	}
	for _, a := range t.Actions {
		if alias(a.Name) == name || strings.HasSuffix(a.Name, "."+name) {
			return a
		}
	}
	return nil
}

// Key returns a key field by name.
func (t *TableLayout) Key(name string) *KeyLayout {
	for _, k := range t.Keys {
		if k.Name == name {
			return k
		}
	}
	for _, k := range t.Keys {
		if strings.HasSuffix(k.Name, "."+name) || alias(k.Name) == name {
			return k
		}
	}
	return nil
}

// Marshal returns the whole model (P4Info plus edgenf's layouts) as JSON.
func (m *P4Info) Marshal() ([]byte, error) { return json.MarshalIndent(m, "", "  ") }
