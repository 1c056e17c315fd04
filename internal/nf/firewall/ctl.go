// Package firewall is the firewall NF: a transparent cube with an ingress and
// an egress chain of IPv4 rules (prefixes, protocol, port ranges, TCP flags,
// connection-tracking state; accept or drop, optional rate-limited log), a
// default policy per chain, per-rule counters, connection tracking with a TCP
// state machine, bit-vector classification for ≥10,000 rules per chain, and
// atomic replacement of the whole rule set.
package firewall

import (
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
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"github.com/edgenf/edgenf/internal/nf/counters"
)

// Kernel layouts (mirrors of bpf/firewall.bpf.c).

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
	Family    uint8
	Addr      [16]byte
}

// prefixKey is the fw_lpm key of prefix p: the family byte keeps IPv4 and
// IPv6 apart, IPv4 addresses fill the first four bytes.
func prefixKey(p netip.Prefix, gen, ch, dim uint8) lpmKey {
	k := lpmKey{PrefixLen: 32 + uint32(p.Bits()), Gen: gen, Chain: ch, Dim: dim, Family: 6}
	if p.Addr().Is4() {
		k.Family = 4
		a := p.Addr().As4()
		copy(k.Addr[:], a[:])
	} else {
		k.Addr = p.Addr().As16()
	}
	return k
}

type clsKey struct {
	Gen   uint8
	Chain uint8
	Dim   uint8
	_     uint8
	Cls   uint32
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
	base [2]map[int]counters.Traffic
	cfg  Config
	log  []LogEntry
	tick int
}

func decodeConfig(c *cube.Cube) (*Config, error) { return cube.ConfigOf[Config](Type, c) }

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
			ctl.base[ch] = map[int]counters.Traffic{}
		}
		for bit, id := range ctl.ids[ch] {
			k, err := counters.ReadTraffic(maps.counters, uint32((int(old)*2+ch)*MaxRules+bit))
			if err == nil {
				b := ctl.base[ch][id]
				b.Packets += k.Packets
				b.Bytes += k.Bytes
				ctl.base[ch][id] = b
			}
		}
		if k, err := counters.ReadTraffic(maps.counters, uint32(cntPolicy+int(old)*2+ch)); err == nil {
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
		if err := bpfmap.Put(m.rules, keys, vals); err != nil {
			return fmt.Errorf("fw_rules: %w", err)
		}
		if err := counters.Zero[counters.Traffic](m.counters, keys...); err != nil {
			return fmt.Errorf("fw_counters: %w", err)
		}
	}
	if err := counters.Zero[counters.Traffic](m.counters, uint32(cntPolicy)+mi); err != nil {
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
			keys = append(keys, prefixKey(p, gen, ch, uint8(d)))
			vals = append(vals, c)
			addCls(d, c, b)
		}
		if err := bpfmap.Put(m.lpm, keys, vals); err != nil {
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
		if err := bpfmap.Put(m.portcls, keys, cs.portCls[d]); err != nil {
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
		if err := bpfmap.Put(m.flagcls, keys, cs.flagCls); err != nil {
			return fmt.Errorf("fw_flagcls: %w", err)
		}
	}
	for s, b := range cs.state {
		if b != nil {
			addCls(dState, uint32(s), b)
		}
	}
	if len(ckeys) > 0 {
		if err := bpfmap.Put(m.cls, ckeys, cvals); err != nil {
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

// Sweep ages connections out every 5 s, off the engine's lock.
func (ctl *controller) Sweep(h cube.Handle, now time.Time) {
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
	return conntrack.Sweep(m, to, all, func(v kconn) (conntrack.Conn, bool, conntrack.Tuple46) {
		return v.C, false, conntrack.Tuple46{}
	})
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
