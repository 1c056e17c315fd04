// Package ir lowers a checked P4 program to the resources edgenf creates for
// it: tables with their BPF map layouts, actions with their parameter
// layouts, counters, and the p4c-compatible control-plane ids. Control-flow
// bodies stay typed AST (sema.Info); the backend walks them directly.
package ir

import (
	"fmt"
	"math/big"
	"regexp"
	"sort"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// Resource type prefixes of P4Runtime ids (p4info.proto, P4Ids.Prefix).
const (
	PrefixAction        = 0x01
	PrefixTable         = 0x02
	PrefixValueSet      = 0x03
	PrefixActionProfile = 0x11
	PrefixCounter       = 0x12
	PrefixDirectCounter = 0x13
	PrefixMeter         = 0x14
	PrefixDirectMeter   = 0x15
	PrefixRegister      = 0x16
	PrefixDigest        = 0x17
)

// Table kinds: how a table is laid out in BPF maps.
const (
	KindHash    = "hash"    // all keys exact: BPF_MAP_TYPE_HASH
	KindLPM     = "lpm"     // exact keys + one lpm key: BPF_MAP_TYPE_LPM_TRIE
	KindScan    = "scan"    // ternary/range/optional: BPF_MAP_TYPE_ARRAY scanned by priority
	KindConst   = "const"   // const entries: compiled into the program
	KindKeyless = "keyless" // no key: only the default action
)

// Param is an action parameter laid out in a table value.
type Param struct {
	Name   string
	ID     uint32 // 1-based
	Width  int
	Offset int // byte offset in the action parameter area
	Size   int // bytes (big-endian, right-aligned)
}

// Action is an action with its id and parameter layout.
type Action struct {
	Ent        *sema.Action
	Name       string // fully qualified
	ID         uint32
	Params     []*Param
	ParamBytes int
	Annots     syntax.Annotations
}

// KeyField is one key element of a table.
type KeyField struct {
	Ent       *sema.KeyInfo
	Name      string
	ID        uint32 // 1-based, declaration order
	MatchKind string
	Width     int
	Offset    int // byte offset in the key data (after the 4-byte prefix length for lpm)
	Size      int // bytes (big-endian, right-aligned)
	RangeOff  int // scan tables, range keys: offset of lo (hi follows) in the range area
}

// TableAction is an element of a table's action list.
type TableAction struct {
	Action      *Action
	DefaultOnly bool
	TableOnly   bool
}

// Table is a table and its BPF map layout.
//
// Value layout (hash/lpm map values, the default map, scan entries' tail):
//
//	[0:4]   action id (host byte order); 0 in the default map = the compiled default
//	[4:8]   reserved
//	[8:24]  packets, bytes (u64, host order) if the table has a direct counter
//	[ParamOff:] action parameters, big-endian, at the action's Param offsets
//
// Key layout: fields in map order (Keys), big-endian, right-aligned in
// ceil(width/8) bytes. LPM tables put the exact fields first and the lpm field
// last, after a u32 prefix length (host order) counting bits from the first
// key byte. Scan tables' entries (an ARRAY of Size entries) are
//
//	[0:4] priority (host order, higher wins, 0 = empty slot) [4:8] reserved
//	[8:8+KeyBytes] value, [8+KeyBytes:8+2*KeyBytes] mask (range fields: 0/0)
//	[RangeOff:RangeOff+RangeBytes] lo,hi per range field  [ValueOff:] value
type Table struct {
	Ent            *sema.Table
	Name           string
	ID             uint32
	Kind           string
	MapName        string      // entries (absent for const/keyless)
	CountMapName   string      // scan: 1-entry ARRAY with the number of slots to scan
	DefaultMapName string      // 1-entry ARRAY with the default action
	Keys           []*KeyField // map order
	KeysDecl       []*KeyField // declaration order (P4Info order)
	KeyBytes       int
	RangeBytes     int
	Size           int
	Actions        []*TableAction
	Default        *sema.ActionCall
	ConstDefault   bool
	DirectCounter  *Counter
	CounterOff     int // -1 without direct counter
	DirectMeter    *Meter
	MeterOff       int // -1 without direct meter: struct p4_meter in the value
	IdleOff        int // -1 without support_timeout: __u64 time of the last hit in the value
	ParamOff       int
	ValueBytes     int
	EntryRangeOff  int // scan
	EntryValueOff  int // scan
	EntryBytes     int // scan
	NeedsPriority  bool
	// Profile: the table's implementation, an action profile or selector
	// (actprof.go); SelectorKeys are the fields its selector hashes.
	Profile      *ActionProfile
	SelectorKeys []*KeyField
}

// Counter is an indirect or direct counter.
type Counter struct {
	Ent     *sema.Instance
	Name    string
	ID      uint32
	Unit    string // "packets", "bytes", "packets_and_bytes"
	Size    int
	MapName string // indirect: PERCPU_ARRAY of {u64 packets, u64 bytes}
	Direct  bool
	Table   *Table // direct counters
}

// Register is a v1model register<T>(Size): a plain BPF_MAP_TYPE_ARRAY of
// Size u64 cells (host order, the value right-aligned, Width bits). It is not
// per-CPU: every CPU sees the same cells; a single read or write is atomic, a
// read-modify-write sequence is not, unless in an @atomic block (backend/atomic.go).
type Register struct {
	Ent     *sema.Instance
	Name    string
	ID      uint32
	Width   int
	Signed  bool
	Size    int
	MapName string
	// Init is PSA's initial value (Register(size, initial_value)), N
	// bits two's complement. A cell holds its value XOR Init, so the
	// zeroed map every load starts with reads Init everywhere without a
	// write per cell; the control plane (tableruntime) applies the same.
	Init uint64
}

// Meter is a v1model meter(Size, type): a two-rate three-colour marker
// (RFC 2698, colour-blind) per index, in a BPF_MAP_TYPE_ARRAY of
// struct p4_meter (see p4info.MeterLayout), shared by all CPUs; the
// datapath serialises a cell's update with a compare-and-swap flag.
type Meter struct {
	Ent     *sema.Instance
	Name    string
	ID      uint32
	Unit    string // "packets" or "bytes"
	Size    int
	MapName string
	// Direct meters (direct_meter): one cell in each entry's value of
	// Table, at Table.MeterOff; no map of their own.
	Direct bool
	Table  *Table
}

// ValueSet is a parser value_set: an ARRAY map of Size members
// {u64 value, u64 mask, u32 valid, u32 reserved} (host order); a select key
// k matches when some valid member has k & mask == value.
type ValueSet struct {
	Ent     *sema.ValueSet
	Name    string
	ID      uint32
	Width   int
	Size    int
	MapName string
}

// Program is the lowered program.
type Program struct {
	ValueSets      []*ValueSet
	ValueSetOf     map[*sema.ValueSet]*ValueSet
	Arch           string
	Info           *sema.Info
	Actions        []*Action
	Tables         []*Table
	Counters       []*Counter
	DirectCounters []*Counter
	ActionOf       map[*sema.Action]*Action
	TableOf        map[*sema.Table]*Table
	CounterOf      map[*sema.Instance]*Counter
	Registers      []*Register
	RegisterOf     map[*sema.Instance]*Register
	Meters         []*Meter
	MeterOf        map[*sema.Instance]*Meter
	DirectMeters   []*Meter
	// Replicates: the program clones, multicasts, resubmits or
	// recirculates (replicate.go): it has clone sessions and multicast
	// groups, and runs the replicating pipeline.
	Replicates bool
	// ActionProfiles: action profiles and selectors (actprof.go).
	ActionProfiles []*ActionProfile
	// Recirculates: the program recirculates (a recirculated packet is
	// parsed again).
	Recirculates bool
}

// DefaultTableSize is used when a table has no size property (p4c uses 1024).
const DefaultTableSize = 1024

// MaxScanSize bounds scan (ternary/range) tables; each lookup visits every slot.
const MaxScanSize = 4096

// Build lowers a checked program.
func Build(info *sema.Info, src *syntax.Sources) (*Program, error) {
	p := &Program{Arch: info.Main.Arch, Info: info, ActionOf: map[*sema.Action]*Action{}, TableOf: map[*sema.Table]*Table{}, CounterOf: map[*sema.Instance]*Counter{}, RegisterOf: map[*sema.Instance]*Register{}, MeterOf: map[*sema.Instance]*Meter{}, ValueSetOf: map[*sema.ValueSet]*ValueSet{}}
	var errs syntax.ErrorList
	ids := newIDAlloc()
	// explicit @id first so they win
	for _, a := range info.Actions {
		ids.reserve(PrefixAction, a.Annots)
	}
	for _, t := range info.Tables {
		ids.reserve(PrefixTable, t.Annots)
	}
	for _, in := range info.Instances {
		switch sema.ExternKind(in.Extern.Name) {
		case "counter":
			ids.reserve(PrefixCounter, in.Annots)
		case "direct_counter":
			ids.reserve(PrefixDirectCounter, in.Annots)
		case "register":
			ids.reserve(PrefixRegister, in.Annots)
		case "meter":
			ids.reserve(PrefixMeter, in.Annots)
		case "direct_meter":
			ids.reserve(PrefixDirectMeter, in.Annots)
		case "action_profile", "action_selector":
			ids.reserve(PrefixActionProfile, in.Annots)
		}
	}
	seenAction := map[string]*Action{}
	for _, a := range info.Actions {
		if !info.LiveControl(a.Control) {
			continue
		}
		if old := seenAction[a.FullName]; old != nil {
			p.ActionOf[a] = old
			continue
		}
		ia := &Action{Ent: a, Name: a.FullName, Annots: a.Annots}
		ia.ID = ids.id(PrefixAction, a.FullName, a.Annots)
		off := 0
		for i, pr := range a.DataParams {
			w := sema.Width(pr.Type)
			sz := (w + 7) / 8
			ia.Params = append(ia.Params, &Param{Name: pr.Name, ID: uint32(i + 1), Width: w, Offset: off, Size: sz})
			off += sz
		}
		ia.ParamBytes = off
		seenAction[a.FullName] = ia
		p.ActionOf[a] = ia
		p.Actions = append(p.Actions, ia)
	}
	mapNames := map[string]bool{}
	mapName := func(prefix, full string) string {
		n := prefix + sanitize(full)
		if len(n) > 40 {
			n = n[:40]
		}
		base := n
		for i := 2; mapNames[n]; i++ {
			n = fmt.Sprintf("%s_%d", base, i)
		}
		mapNames[n] = true
		return n
	}
	for _, in := range info.Instances {
		if !info.LiveControl(in.Control) {
			continue
		}
		switch sema.ExternKind(in.Extern.Name) {
		case "counter":
			c := &Counter{Ent: in, Name: in.FullName, Unit: counterUnit(in, 1)}
			c.ID = ids.id(PrefixCounter, in.FullName, in.Annots)
			if len(in.Args) > 0 {
				c.Size = int(in.Args[0].Int64())
			}
			if c.Size <= 0 || c.Size > 1<<20 {
				errs = append(errs, src.Errorf(in.Decl.Pos, "counter %s: size %d out of range (1..%d)", in.Name, c.Size, 1<<20))
			}
			c.MapName = mapName("c_", in.FullName)
			p.Counters = append(p.Counters, c)
			p.CounterOf[in] = c
		case "direct_counter":
			c := &Counter{Ent: in, Name: in.FullName, Unit: counterUnit(in, 0), Direct: true}
			c.ID = ids.id(PrefixDirectCounter, in.FullName, in.Annots)
			p.DirectCounters = append(p.DirectCounters, c)
			p.CounterOf[in] = c
		case "register":
			r := &Register{Ent: in, Name: in.FullName}
			r.ID = ids.id(PrefixRegister, in.FullName, in.Annots)
			if len(in.Args) > 0 {
				r.Size = int(in.Args[0].Int64())
			}
			if r.Size <= 0 || r.Size > 1<<20 {
				errs = append(errs, src.Errorf(in.Decl.Pos, "register %s: size %d out of range (1..%d)", in.Name, r.Size, 1<<20))
			}
			if len(in.TypeArgs) > 0 { // register<T> or register<T, I> (the index type)
				switch t := in.TypeArgs[0].(type) {
				case *sema.Bits:
					r.Width, r.Signed = t.W, t.Signed
				case *sema.Bool:
					r.Width = 1
				}
			}
			if r.Width <= 0 || r.Width > 64 {
				errs = append(errs, src.Errorf(in.Decl.Pos, "unsupported: register %s: element type must be bit<N>, int<N> (N <= 64) or bool (not yet implemented by edgenf's P4 compiler)", in.Name))
			}
			if len(in.Args) > 1 && r.Width > 0 && r.Width <= 64 { // PSA's initial_value
				r.Init = new(big.Int).And(in.Args[1], new(big.Int).SetUint64(^uint64(0)>>(64-r.Width))).Uint64()
			}
			r.MapName = mapName("r_", in.FullName)
			p.Registers = append(p.Registers, r)
			p.RegisterOf[in] = r
		case "meter":
			m := &Meter{Ent: in, Name: in.FullName, Unit: "packets"}
			m.ID = ids.id(PrefixMeter, in.FullName, in.Annots)
			if len(in.Args) > 0 {
				m.Size = int(in.Args[0].Int64())
			}
			if len(in.Args) > 1 && in.Args[1].Int64() == 1 {
				m.Unit = "bytes"
			}
			if m.Size <= 0 || m.Size > 1<<20 {
				errs = append(errs, src.Errorf(in.Decl.Pos, "meter %s: size %d out of range (1..%d)", in.Name, m.Size, 1<<20))
			}
			m.MapName = mapName("m_", in.FullName)
			p.Meters = append(p.Meters, m)
			p.MeterOf[in] = m
		case "direct_meter":
			m := &Meter{Ent: in, Name: in.FullName, Unit: "packets", Direct: true}
			m.ID = ids.id(PrefixDirectMeter, in.FullName, in.Annots)
			if len(in.Args) > 0 && in.Args[0].Int64() == 1 {
				m.Unit = "bytes"
			}
			p.DirectMeters = append(p.DirectMeters, m)
			p.MeterOf[in] = m
		}
	}
	for _, t := range info.Tables {
		if !info.LiveControl(t.Control) {
			continue
		}
		it := &Table{Ent: t, Name: t.FullName, Default: t.Default, ConstDefault: t.ConstDefault, CounterOff: -1, MeterOff: -1, IdleOff: -1}
		it.ID = ids.id(PrefixTable, t.FullName, t.Annots)
		for _, ta := range t.Actions {
			it.Actions = append(it.Actions, &TableAction{Action: p.ActionOf[ta.Action], DefaultOnly: ta.DefaultOnly, TableOnly: ta.TableOnly})
		}
		it.Size = t.Size
		if it.Size == 0 {
			it.Size = DefaultTableSize
		}
		// kind
		nLPM, nOther := 0, 0
		for _, k := range t.Keys {
			kf := &KeyField{Ent: k, Name: k.Name, ID: uint32(len(it.KeysDecl) + 1), MatchKind: k.MatchKind, Width: k.Width, Size: (k.Width + 7) / 8}
			if k.MatchKind == "selector" { // hashed by the action selector, not matched (actprof.go)
				it.SelectorKeys = append(it.SelectorKeys, kf)
				continue
			}
			it.KeysDecl = append(it.KeysDecl, kf)
			switch k.MatchKind {
			case "exact":
			case "lpm":
				nLPM++
			default:
				nOther++
			}
		}
		switch {
		case len(it.KeysDecl) == 0:
			it.Kind = KindKeyless
		case len(t.Entries) > 0:
			it.Kind = KindConst
		case nOther == 0 && nLPM == 0:
			it.Kind = KindHash
		case nOther == 0 && nLPM == 1:
			it.Kind = KindLPM
		default:
			it.Kind = KindScan
			it.NeedsPriority = true
		}
		if nLPM > 1 {
			errs = append(errs, src.Errorf(t.Decl.Pos, "table %s has %d lpm keys; at most one is allowed", t.Name, nLPM))
		}
		// key layout
		order := append([]*KeyField(nil), it.KeysDecl...)
		if it.Kind == KindLPM {
			sort.SliceStable(order, func(i, j int) bool { return order[i].MatchKind != "lpm" && order[j].MatchKind == "lpm" })
			for _, k := range order {
				if k.MatchKind == "lpm" && k.Width%8 != 0 {
					errs = append(errs, src.Errorf(k.Ent.Elem.Pos, "lpm key of %d bits: edgenf needs a whole number of bytes", k.Width))
				}
			}
		}
		off := 0
		roff := 0
		for _, k := range order {
			k.Offset = off
			off += k.Size
			if k.MatchKind == "range" {
				if k.Width > 64 {
					errs = append(errs, src.Errorf(k.Ent.Elem.Pos, "range keys wider than 64 bits are not supported"))
				}
				k.RangeOff = roff
				roff += 2 * k.Size
			}
		}
		it.Keys = order
		it.KeyBytes = off
		it.RangeBytes = roff
		// value layout
		if t.DirectCounter != nil {
			dc := p.CounterOf[t.DirectCounter]
			if dc.Table != nil {
				errs = append(errs, src.Errorf(t.Decl.Pos, "direct counter %s is already used by table %s", dc.Name, dc.Table.Name))
			}
			dc.Table = it
			it.DirectCounter = dc
			it.CounterOff = 8
			it.ParamOff = 24
		} else {
			it.ParamOff = 8
		}
		if t.DirectMeter != nil {
			errs = append(errs, directMeterLayout(src, p, t, it)...)
		}
		if t.SupportTimeout {
			errs = append(errs, idleLayout(src, t, it)...)
		}
		maxp := 0
		for _, ta := range it.Actions {
			if ta.Action.ParamBytes > maxp {
				maxp = ta.Action.ParamBytes
			}
		}
		it.ValueBytes = align8(it.ParamOff + maxp)
		if it.Kind == KindScan {
			it.EntryRangeOff = 8 + 2*it.KeyBytes
			it.EntryValueOff = align8(it.EntryRangeOff + it.RangeBytes)
			it.EntryBytes = it.EntryValueOff + it.ValueBytes
			if it.Size > MaxScanSize {
				errs = append(errs, src.Errorf(t.Decl.Pos, "table %s: ternary/range tables hold at most %d entries (size = %d)", t.Name, MaxScanSize, it.Size))
			}
		}
		if it.Kind != KindConst && it.Kind != KindKeyless {
			it.MapName = mapName("t_", t.FullName)
		}
		if it.Kind == KindScan {
			it.CountMapName = mapName("tn_", t.FullName)
		}
		it.DefaultMapName = mapName("td_", t.FullName)
		p.Tables = append(p.Tables, it)
		p.TableOf[t] = it
	}
	errs = append(errs, p.actionProfiles(src, ids, mapName)...) // actprof.go
	for _, vs := range info.ValueSets {
		ids.reserve(PrefixValueSet, vs.Decl.Annotations)
	}
	for _, vs := range info.ValueSets {
		v := &ValueSet{Ent: vs, Name: vs.FullName, Width: sema.Width(vs.Elem), Size: vs.Size}
		v.ID = ids.id(PrefixValueSet, vs.FullName, vs.Decl.Annotations)
		if v.Width > 64 {
			errs = append(errs, src.Errorf(vs.Decl.Pos, "value_set members wider than 64 bits are not supported"))
		}
		if v.Size < 1 || v.Size > 256 {
			errs = append(errs, src.Errorf(vs.Decl.Pos, "value_set size %d out of range (1..256)", v.Size))
		}
		v.MapName = mapName("vs_", vs.FullName)
		p.ValueSets = append(p.ValueSets, v)
		p.ValueSetOf[vs] = v
	}
	for _, dm := range p.DirectMeters {
		if dm.Table == nil {
			errs = append(errs, src.Errorf(dm.Ent.Decl.Pos, "direct meter %s is not attached to any table (meters = %s;)", dm.Ent.Name, dm.Ent.Name))
		}
	}
	for _, dc := range p.DirectCounters {
		if dc.Table == nil {
			errs = append(errs, src.Errorf(dc.Ent.Decl.Pos, "direct counter %s is not attached to any table (counters = %s;)", dc.Ent.Name, dc.Ent.Name))
		}
	}
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	p.Replicates, p.Recirculates = replication(info)
	return p, nil
}

func counterUnit(in *sema.Instance, arg int) string {
	if arg < len(in.Args) {
		switch in.Args[arg].Int64() {
		case 0:
			return "packets"
		case 1:
			return "bytes"
		}
	}
	return "packets_and_bytes"
}

func align8(n int) int { return (n + 7) &^ 7 }

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

func sanitize(s string) string { return nonIdent.ReplaceAllString(s, "_") }

// ---------- ids ----------

// JenkinsHash is the one-at-a-time hash p4c uses for P4Info ids.
func JenkinsHash(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

type idAlloc struct{ used map[uint32]bool }

func newIDAlloc() *idAlloc { return &idAlloc{used: map[uint32]bool{}} }

func explicitID(prefix uint32, as syntax.Annotations) (uint32, bool) {
	a := as.Get("id")
	if a == nil || len(a.Args) != 1 {
		return 0, false
	}
	lit, ok := a.Args[0].(*syntax.IntLit)
	if !ok || !lit.Val.IsUint64() || lit.Val.Uint64() > 0xffffffff {
		return 0, false
	}
	v := uint32(lit.Val.Uint64())
	if v>>24 == 0 {
		v |= prefix << 24
	}
	return v, true
}

func (a *idAlloc) reserve(prefix uint32, as syntax.Annotations) {
	if v, ok := explicitID(prefix, as); ok {
		a.used[v] = true
	}
}

// id returns the p4c-style id: prefix in the top byte, the Jenkins hash of
// the fully qualified name in the low 24 bits, probing on collisions; an
// @id annotation wins.
func (a *idAlloc) id(prefix uint32, name string, as syntax.Annotations) uint32 {
	if v, ok := explicitID(prefix, as); ok {
		return v
	}
	h := JenkinsHash(name) & 0xffffff
	for {
		v := prefix<<24 | h
		if !a.used[v] && h != 0 {
			a.used[v] = true
			return v
		}
		h = (h + 1) & 0xffffff
	}
}

// Sanitize turns a P4 name into a C identifier fragment.
func Sanitize(s string) string { return sanitize(s) }
