// Package firewall is the firewall NF: a transparent cube with an ingress and
// an egress chain of IPv4 rules (prefixes, protocol, port ranges, TCP flags,
// connection-tracking state; accept or drop, optional rate-limited log), a
// default policy per chain, per-rule counters, connection tracking with a TCP
// state machine, bit-vector classification for ≥10,000 rules per chain, and
// atomic replacement of the whole rule set.
package firewall

import (
	"embed"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
)

// objects are the fast path built for each hook (make bpf).
//
//go:embed bpf/*.o
var objects embed.FS

// Chains, as the direction index.
var chainNames = [2]string{"ingress", "egress"}

func ruleTable(chain string) cube.Table {
	return cube.Table{
		Name: chain,
		Doc:  fmt.Sprintf("Rules of the %s chain, tried by increasing id; the first match decides.", chain),
		Item: &Rule{},
		Key:  func(v any) string { return strconv.Itoa(v.(*Rule).ID) },
		Max:  MaxRules,
	}
}

var tables = []cube.Table{ruleTable("ingress"), ruleTable("egress")}

// ---- kernel layouts ----

type kmeta struct {
	NRules            uint32
	NWords            uint32
	Dims              uint32
	Policy            uint8
	AcceptEstablished uint8
	Valid             uint8
	_                 uint8
}

type krule struct {
	Action uint8
	Log    uint8
	_      uint16
	ID     uint32
}

type kcfg struct {
	LogRate uint32
	_       uint32
	To      conntrack.KTimeouts
}

type lpmKey struct {
	PrefixLen uint32
	Gen       uint8
	Chain     uint8
	Dim       uint8
	_         uint8
	Addr      [4]byte
}

type clsKey struct {
	Gen   uint8
	Chain uint8
	Dim   uint8
	_     uint8
	Cls   uint32
}

type kcount struct {
	Packets uint64
	Bytes   uint64
}

type kconn struct {
	C           conntrack.Conn
	OrigSwapped uint8
	_           [7]uint8
	VCache      [2]uint64
}

// Counter indexes past the rules' (FW_CNT_* in firewall.bpf.c).
const (
	cntPolicy   = 4 * MaxRules
	cntEstab    = 4*MaxRules + 4
	cntInvalid  = 4*MaxRules + 8
	cntUnparsed = 4*MaxRules + 12
	cntBadFrag  = 4*MaxRules + 14
)

// Rows of the counters view that are not rules.
const (
	rowPolicy      = 0  // the chain's default policy
	rowEstablished = -1 // the accept_established shortcut
	rowUnparsed    = -2 // frames that could not be parsed, and later fragments of unseen datagrams: the policy judged them
	rowBadFragment = -3 // fragments that hide or rewrite their datagram's L4 header: dropped
)

// ---- controller ----

type written struct {
	lpm []lpmKey
	cls []clsKey
}

type controller struct {
	mu sync.Mutex
	// Per generation: the keys written (nil: unknown, e.g. after a daemon
	// restart: the generation is scanned before reuse).
	written [2]*written
	// The rule ids by bit of the active generation, per chain.
	ids [2][]int
	// Counters of retired generations, per chain and rule id (0: policy).
	base [2]map[int]kcount
	cfg  Config
	log  []LogEntry
	tick int
}

func decodeConfig(c *cube.Cube) (*Config, error) {
	v, err := Type.DecodeConfig(c)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return &Config{}, nil
	}
	return v.(*Config), nil
}

func chainRules(c *cube.Cube, chain int) ([]compiled, []int, error) {
	rows := c.Tables[chainNames[chain]]
	out := make([]compiled, 0, len(rows))
	for key, raw := range rows {
		v, err := cube.Decode("tables."+chainNames[chain]+"["+key+"]", raw, &Rule{})
		if err != nil {
			return nil, nil, err
		}
		r, err := v.(*Rule).compile()
		if err != nil {
			return nil, nil, cube.Within("tables."+chainNames[chain]+"["+key+"]", err)
		}
		if strconv.Itoa(r.id) != key {
			return nil, nil, cube.Errorf("tables."+chainNames[chain]+"["+key+"]", "entry stored under key %q has id %d", key, r.id)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	ids := make([]int, len(out))
	for i, r := range out {
		ids[i] = r.id
	}
	return out, ids, nil
}

// Sync compiles both chains into the inactive generation and switches to it
// with one 4-byte map write. Tracked connections are kept.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	cfg, err := decodeConfig(c)
	if err != nil {
		return err
	}
	var sets [2]*chainSet
	var ids [2][]int
	for ch := 0; ch < 2; ch++ {
		rules, rid, err := chainRules(c, ch)
		if err != nil {
			return err
		}
		if len(rules) > MaxRules {
			return cube.Errorf("tables."+chainNames[ch], "%d rules, at most %d", len(rules), MaxRules)
		}
		pol := cfg.IngressPolicy
		if ch == 1 {
			pol = cfg.EgressPolicy
		}
		p, _ := parsePolicy(pol)
		sets[ch] = compileChain(rules, p)
		ids[ch] = rid
	}
	maps, err := openMaps(h)
	if err != nil {
		return err
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	if err := ctl.writeConfig(maps, cfg); err != nil {
		return err
	}
	var active uint32
	if err := maps.active.Lookup(uint32(0), &active); err != nil {
		return err
	}
	target := uint8(1 - active&1)
	if err := ctl.clearGen(maps, target); err != nil {
		return err
	}
	w := &written{}
	for ch := 0; ch < 2; ch++ {
		if err := writeChain(maps, target, uint8(ch), sets[ch], cfg, w); err != nil {
			return fmt.Errorf("write %s chain: %w", chainNames[ch], err)
		}
	}
	ctl.written[target] = w
	// The switch: the version's low bit is the generation; a new version
	// also retires every connection's cached verdicts.
	if err := maps.active.Put(uint32(0), active+1); err != nil {
		return err
	}
	// Fold the retired generation's counters into the base.
	old := uint8(active & 1)
	for ch := 0; ch < 2; ch++ {
		if ctl.base[ch] == nil {
			ctl.base[ch] = map[int]kcount{}
		}
		for bit, id := range ctl.ids[ch] {
			k, err := readCount(maps.counters, uint32((int(old)*2+ch)*MaxRules+bit))
			if err == nil {
				b := ctl.base[ch][id]
				b.Packets += k.Packets
				b.Bytes += k.Bytes
				ctl.base[ch][id] = b
			}
		}
		if k, err := readCount(maps.counters, uint32(cntPolicy+int(old)*2+ch)); err == nil {
			b := ctl.base[ch][0]
			b.Packets += k.Packets
			b.Bytes += k.Bytes
			ctl.base[ch][0] = b
		}
		// Rules that no longer exist lose their history.
		keep := map[int]bool{0: true}
		for _, id := range ids[ch] {
			keep[id] = true
		}
		for id := range ctl.base[ch] {
			if !keep[id] {
				delete(ctl.base[ch], id)
			}
		}
	}
	ctl.ids = ids
	ctl.cfg = *cfg
	return nil
}

type fwMaps struct {
	active, cfg, meta, lpm, cls, portcls, flagcls, rules, counters, conns *ebpf.Map
}

func openMaps(h cube.Handle) (*fwMaps, error) {
	m := &fwMaps{}
	for name, dst := range map[string]**ebpf.Map{"fw_active": &m.active, "fw_cfg": &m.cfg, "fw_meta": &m.meta, "fw_lpm": &m.lpm,
		"fw_cls": &m.cls, "fw_portcls": &m.portcls, "fw_flagcls": &m.flagcls, "fw_rules": &m.rules,
		"fw_counters": &m.counters, "fw_conns": &m.conns} {
		mp, err := h.Map(name)
		if err != nil {
			return nil, err
		}
		*dst = mp
	}
	return m, nil
}

func (ctl *controller) writeConfig(m *fwMaps, cfg *Config) error {
	k := kcfg{LogRate: 100, To: cfg.Timeouts.Kernel()}
	switch {
	case cfg.LogRate < 0:
		k.LogRate = 0
	case cfg.LogRate > 0:
		k.LogRate = uint32(cfg.LogRate)
	}
	if err := m.cfg.Put(uint32(0), k); err != nil {
		return err
	}
	var ones bv
	for i := range ones.W {
		ones.W[i] = ^uint64(0)
	}
	ones.summarize()
	return m.cls.Put(clsKey{Dim: nDims}, &ones)
}

// clearGen deletes what the generation held.
func (ctl *controller) clearGen(m *fwMaps, gen uint8) error {
	w := ctl.written[gen]
	if w == nil {
		// Unknown contents: scan.
		w = &written{}
		var lk, next lpmKey
		var err error
		for err = m.lpm.NextKey(nil, &next); err == nil; err = m.lpm.NextKey(lk, &next) {
			lk = next
			if lk.Gen == gen {
				w.lpm = append(w.lpm, lk)
			}
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("fw_lpm: %w", err)
		}
		var ck, cnext clsKey
		for err = m.cls.NextKey(nil, &cnext); err == nil; err = m.cls.NextKey(ck, &cnext) {
			ck = cnext
			if ck.Gen == gen && ck.Dim != nDims {
				w.cls = append(w.cls, ck)
			}
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("fw_cls: %w", err)
		}
	}
	for _, k := range w.lpm {
		if err := m.lpm.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("fw_lpm: %w", err)
		}
	}
	if len(w.cls) > 0 {
		if _, err := m.cls.BatchDelete(w.cls, nil); err != nil {
			for _, k := range w.cls {
				if err := m.cls.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
					return fmt.Errorf("fw_cls: %w", err)
				}
			}
		}
	}
	ctl.written[gen] = &written{}
	return nil
}

func writeChain(m *fwMaps, gen, ch uint8, cs *chainSet, cfg *Config, w *written) error {
	mi := uint32(gen)*2 + uint32(ch)
	// Invalidate the chain's meta first (the generation is inactive anyway).
	n := len(cs.rules)
	// Rules and zeroed counters.
	if n > 0 {
		keys := make([]uint32, n)
		vals := make([]krule, n)
		for i, r := range cs.rules {
			keys[i] = mi*MaxRules + uint32(i)
			vals[i] = krule{Action: r.action, ID: uint32(r.id)}
			if r.log {
				vals[i].Log = 1
			}
		}
		if err := batchPut(m.rules, keys, vals); err != nil {
			return fmt.Errorf("fw_rules: %w", err)
		}
		if err := zeroCounts(m.counters, keys); err != nil {
			return fmt.Errorf("fw_counters: %w", err)
		}
	}
	if err := zeroCounts(m.counters, []uint32{uint32(cntPolicy) + mi}); err != nil {
		return err
	}
	var ckeys []clsKey
	var cvals []bv
	addCls := func(dim int, cls uint32, b *bv) {
		ckeys = append(ckeys, clsKey{Gen: gen, Chain: ch, Dim: uint8(dim), Cls: cls})
		cvals = append(cvals, *b)
	}
	for d := dSrc; d <= dDst; d++ {
		if cs.lpm[d] == nil {
			continue
		}
		keys := make([]lpmKey, 0, len(cs.lpm[d]))
		vals := make([]uint32, 0, len(cs.lpm[d]))
		for p, b := range cs.lpm[d] {
			c := uint32(len(keys))
			keys = append(keys, lpmKey{PrefixLen: 32 + uint32(p.Bits()), Gen: gen, Chain: ch, Dim: uint8(d), Addr: p.Addr().As4()})
			vals = append(vals, c)
			addCls(d, c, b)
		}
		if err := batchPut(m.lpm, keys, vals); err != nil {
			return fmt.Errorf("fw_lpm: %w", err)
		}
		w.lpm = append(w.lpm, keys...)
	}
	for d := 0; d < 2; d++ {
		if cs.portCls[d] == nil {
			continue
		}
		for c, b := range cs.portVecs[d] {
			addCls(dSport+d, uint32(c), b)
		}
		keys := make([]uint32, 65536)
		base := (mi*2 + uint32(d)) * 65536
		for p := range keys {
			keys[p] = base + uint32(p)
		}
		if err := batchPut(m.portcls, keys, cs.portCls[d]); err != nil {
			return fmt.Errorf("fw_portcls: %w", err)
		}
	}
	for v, b := range cs.proto {
		addCls(dProto, v, b)
	}
	if cs.flagCls != nil {
		for c, b := range cs.flagVecs {
			addCls(dFlags, uint32(c), b)
		}
		keys := make([]uint32, 256)
		for f := range keys {
			keys[f] = mi*256 + uint32(f)
		}
		if err := batchPut(m.flagcls, keys, cs.flagCls); err != nil {
			return fmt.Errorf("fw_flagcls: %w", err)
		}
	}
	for s, b := range cs.state {
		if b != nil {
			addCls(dState, uint32(s), b)
		}
	}
	if len(ckeys) > 0 {
		if err := batchPut(m.cls, ckeys, cvals); err != nil {
			return fmt.Errorf("fw_cls: %w", err)
		}
		w.cls = append(w.cls, ckeys...)
	}
	meta := kmeta{NRules: uint32(n), NWords: uint32((n + 63) / 64), Dims: cs.dims, Policy: cs.policy, Valid: 1}
	if cfg.AcceptEstablished {
		meta.AcceptEstablished = 1
	}
	return m.meta.Put(mi, meta)
}

// batchPut writes many entries with one syscall per chunk, falling back to
// single updates where the map type has no batch operations.
func batchPut[K, V any](m *ebpf.Map, keys []K, vals []V) error {
	const chunk = 4096
	for i := 0; i < len(keys); i += chunk {
		j := min(i+chunk, len(keys))
		if _, err := m.BatchUpdate(keys[i:j], vals[i:j], nil); err != nil {
			if !errors.Is(err, ebpf.ErrNotSupported) {
				return err
			}
			for x := i; x < j; x++ {
				if err := m.Put(keys[x], vals[x]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var ncpu = func() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return 1
	}
	return n
}()

func zeroCounts(m *ebpf.Map, keys []uint32) error {
	zero := make([]kcount, ncpu)
	for _, k := range keys {
		if err := m.Put(k, zero); err != nil {
			return err
		}
	}
	return nil
}

func readCount(m *ebpf.Map, key uint32) (kcount, error) {
	var per []kcount
	if err := m.Lookup(key, &per); err != nil {
		return kcount{}, err
	}
	var s kcount
	for _, c := range per {
		s.Packets += c.Packets
		s.Bytes += c.Bytes
	}
	return s, nil
}

// Tick ages connections out every 5 s.
func (ctl *controller) Tick(h cube.Handle, c *cube.Cube, now time.Time) {
	ctl.mu.Lock()
	ctl.tick++
	t := ctl.tick
	ctl.mu.Unlock()
	if t%5 == 0 {
		if _, err := ctl.ageConns(h, false); err != nil {
			h.Logf("firewall: aging: %v", err)
		}
	}
}

func (ctl *controller) ageConns(h cube.Handle, all bool) (int, error) {
	m, err := h.Map("fw_conns")
	if err != nil {
		return 0, err
	}
	ctl.mu.Lock()
	to := ctl.cfg.Timeouts.Kernel()
	ctl.mu.Unlock()
	now := ktime.Now()
	var dead []conntrack.Tuple
	if err := bpfmap.Each(m, func(k conntrack.Tuple, v kconn) bool {
		if all || v.C.Expired(to, now) {
			dead = append(dead, k)
		}
		return true
	}); err != nil {
		return 0, err
	}
	return len(dead), bpfmap.Delete(m, dead)
}

// ---- views ----

// RuleCounter is the traffic one rule (or a chain's default policy, id 0)
// matched.
type RuleCounter struct {
	Chain string `json:"chain"`
	// ID is the rule's; 0: the default policy; -1: the accept_established
	// shortcut; -2: frames that could not be parsed and later fragments
	// of datagrams whose first fragment was not seen (judged by the
	// policy); -3: fragments dropped for hiding or rewriting their
	// datagram's L4 header (tiny first fragments, TCP at offset 8).
	ID      int    `json:"id"`
	Action  string `json:"action"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

func actName(a uint8) string {
	if a == actDrop {
		return "drop"
	}
	return "accept"
}

func ruleCounters(h cube.Handle, c *cube.Cube) ([]RuleCounter, error) {
	maps, err := openMaps(h)
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	var active uint32
	if err := maps.active.Lookup(uint32(0), &active); err != nil {
		return nil, err
	}
	gen := int(active & 1)
	out := []RuleCounter{}
	for ch := 0; ch < 2; ch++ {
		mi := gen*2 + ch
		var meta kmeta
		maps.meta.Lookup(uint32(mi), &meta)
		for bit, id := range ctl.ids[ch] {
			k, err := readCount(maps.counters, uint32(mi*MaxRules+bit))
			if err != nil {
				return nil, err
			}
			var r krule
			maps.rules.Lookup(uint32(mi*MaxRules+bit), &r)
			b := ctl.base[ch][id]
			out = append(out, RuleCounter{chainNames[ch], id, actName(r.Action), k.Packets + b.Packets, k.Bytes + b.Bytes})
		}
		k, err := readCount(maps.counters, uint32(cntPolicy+mi))
		if err != nil {
			return nil, err
		}
		b := ctl.base[ch][0]
		out = append(out, RuleCounter{chainNames[ch], rowPolicy, actName(meta.Policy), k.Packets + b.Packets, k.Bytes + b.Bytes})
		if meta.AcceptEstablished != 0 {
			k, _ := readCount(maps.counters, uint32(cntEstab+ch))
			out = append(out, RuleCounter{chainNames[ch], rowEstablished, "accept", k.Packets, k.Bytes})
		}
		// rows for what the parser refused, when there was any
		if k, err := readCount(maps.counters, uint32(cntUnparsed+ch)); err == nil && k.Packets > 0 {
			out = append(out, RuleCounter{chainNames[ch], rowUnparsed, actName(meta.Policy), k.Packets, k.Bytes})
		}
		if k, err := readCount(maps.counters, uint32(cntBadFrag+ch)); err == nil && k.Packets > 0 {
			out = append(out, RuleCounter{chainNames[ch], rowBadFragment, "drop", k.Packets, k.Bytes})
		}
	}
	return out, nil
}

// Connection is one tracked connection.
type Connection struct {
	Proto string  `json:"proto"`
	Src   string  `json:"src"` // the originator
	Dst   string  `json:"dst"`
	State string  `json:"state"`
	Reply bool    `json:"replied"`
	Idle  float64 `json:"idle_seconds"`
}

const maxListed = 10000

func connections(h cube.Handle) ([]Connection, error) {
	m, err := h.Map("fw_conns")
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	to := ctl.cfg.Timeouts.Kernel()
	ctl.mu.Unlock()
	now := ktime.Now()
	out := []Connection{}
	err = bpfmap.Each(m, func(k conntrack.Tuple, v kconn) bool {
		if v.C.Expired(to, now) {
			return true
		}
		t := k
		if v.OrigSwapped != 0 {
			t = conntrack.Tuple{Saddr: k.Daddr, Daddr: k.Saddr, Sport: k.Dport, Dport: k.Sport, Proto: k.Proto}
			if k.Proto == 1 {
				t.Sport, t.Dport = k.Sport, k.Dport
			}
		}
		out = append(out, Connection{Proto: conntrack.ProtoName(k.Proto), Src: t.Src(), Dst: t.Dst(),
			State: conntrack.StateName(v.C.State), Reply: v.C.Flags&conntrack.FlagReplied != 0, Idle: v.C.IdleSeconds(now)})
		return len(out) < maxListed
	})
	sort.Slice(out, func(i, j int) bool {
		return out[i].Src < out[j].Src || out[i].Src == out[j].Src && out[i].Dst < out[j].Dst
	})
	return out, err
}

// LogEntry is a packet a rule with log matched.
type LogEntry struct {
	Time    time.Time `json:"time"`
	Chain   string    `json:"chain"`
	Rule    int       `json:"rule"`
	Verdict string    `json:"verdict"`
	Packet  string    `json:"packet"`
	Length  int       `json:"length"`
}

const keepLog = 256

// HandlePunt records logged packets.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	e := LogEntry{Time: time.Now(), Chain: chainNames[p.Arg>>31], Rule: int(p.Arg & 0x7fffffff), Length: p.PktLen, Packet: describe(p.Frame)}
	e.Verdict = "accept"
	if p.Reason == 2 {
		e.Verdict = "drop"
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.log = append(ctl.log, e)
	if len(ctl.log) > keepLog {
		ctl.log = ctl.log[len(ctl.log)-keepLog:]
	}
}

// describe summarises an Ethernet/IPv4 frame.
func describe(b []byte) string {
	off := 14
	for off+4 <= len(b) && (b[off-2] == 0x81 && b[off-1] == 0x00 || b[off-2] == 0x88 && b[off-1] == 0xa8) {
		off += 4
	}
	if len(b) < off+20 || b[off-2] != 0x08 || b[off-1] != 0x00 {
		return fmt.Sprintf("non-IPv4 frame of %d bytes", len(b))
	}
	ip := b[off:]
	src, dst := netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	ihl := int(ip[0]&0xf) * 4
	l4 := ip[min(ihl, len(ip)):]
	switch ip[9] {
	case 6, 17:
		if len(l4) >= 4 {
			name := "tcp"
			if ip[9] == 17 {
				name = "udp"
			}
			return fmt.Sprintf("%s %s:%d > %s:%d", name, src, int(l4[0])<<8|int(l4[1]), dst, int(l4[2])<<8|int(l4[3]))
		}
	case 1:
		if len(l4) >= 2 {
			return fmt.Sprintf("icmp %s > %s type %d code %d", src, dst, l4[0], l4[1])
		}
	}
	return fmt.Sprintf("proto %d %s > %s", ip[9], src, dst)
}

// Type is the firewall NF type.
var Type = &cube.Type{
	Name:        "firewall",
	Description: "Transparent: ingress/egress chains of IPv4 rules (prefixes, protocol, ports, TCP flags, conntrack state), accept/drop/log, default policies, per-rule counters; bit-vector classification, atomic rule-set replacement.",
	Transparent: true,
	Hooks:       []datapath.Hook{datapath.XDP, datapath.TC},
	Object:      cube.HookObjects(objects, "bpf/firewall"),
	Config:      &Config{},
	Tables:      tables,
	Views: []cube.View{
		{Name: "counters", Doc: "Packets and bytes per rule; id 0 is the chain's default policy, -1 the accept_established shortcut, -2 frames that could not be parsed (judged by the policy), -3 fragments dropped for hiding or rewriting their L4 header.",
			Item: &RuleCounter{}, List: func(h cube.Handle, c *cube.Cube) (any, error) { return ruleCounters(h, c) }},
		{Name: "connections", Doc: "Tracked connections (originator first; at most 10,000 listed).", Item: &Connection{},
			List: func(h cube.Handle, _ *cube.Cube) (any, error) { return connections(h) }},
		{Name: "log", Doc: "The last packets matched by rules with log (rate-limited).", Item: &LogEntry{},
			List: func(h cube.Handle, _ *cube.Cube) (any, error) {
				ctl := cube.ControllerOf[*controller](h)
				ctl.mu.Lock()
				defer ctl.mu.Unlock()
				return append([]LogEntry{}, ctl.log...), nil
			}},
	},
	Actions: []cube.Action{
		{Name: "flush-connections", Doc: "Forget every tracked connection.", Do: func(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
			n, err := cube.ControllerOf[*controller](h).ageConns(h, true)
			if err != nil {
				return nil, err
			}
			return map[string]int{"flushed": n}, nil
		}},
	},
	New: func() cube.Controller { return &controller{} },
}

func init() { cube.Register(Type) }
