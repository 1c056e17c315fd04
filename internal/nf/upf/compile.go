package upf

import (
	"encoding/binary"
	"net/netip"
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// A session compiled into kernel values, before indexes are assigned: rules
// name their FAR, QERs and URRs by PFCP ID.

// ruleKey names one kernel rule of a session: a PDR and which combination
// of its SDF filters (and their port ranges) and QFIs it is.
type ruleKey struct {
	PDR     uint16
	Variant uint16
}

func (k ruleKey) id() uint32 { return uint32(k.PDR) | uint32(k.Variant)<<16 }

func ruleKeyOf(id uint32) ruleKey { return ruleKey{uint16(id), uint16(id >> 16)} }

// listKey is what the fast path finds rules by.
type listKey struct {
	Kind uint8 // keyTEID, keyUE4, keyUE6
	K    uint64
}

const (
	keyTEID = 1
	keyUE4  = 2
	keyUE6  = 3
)

func (k listKey) String() string {
	switch k.Kind {
	case keyTEID:
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], uint32(k.K))
		return "TEID " + hex32(binary.BigEndian.Uint32(b[:]))
	case keyUE4:
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], uint32(k.K))
		return "UE address " + netip.AddrFrom4(b).String()
	default:
		var b [16]byte
		binary.NativeEndian.PutUint64(b[:], k.K)
		return "UE prefix " + netip.PrefixFrom(netip.AddrFrom16(b), 64).String()
	}
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	b := []byte("0x00000000")
	for i := 9; i >= 2; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}

type cRule struct {
	key   ruleKey
	prec  uint32
	lists []listKey
	rule  kRule // FAR, QER, URR and SDF are filled in with indexes
	sdf   *kSDF
	far   uint32
	qers  []uint32
	urrs  []uint32
}

// urrConf is a URR's configuration as the kernel and the usage accounting
// see it.
type urrConf struct {
	flags     uint32   // urrTh*, urrQ*
	th        [3]int64 // total, uplink, downlink thresholds (octets)
	q         [3]int64 // quotas
	period    uint32   // seconds, 0: none
	timeTh    uint32
	timeQuota uint32
	volume    bool // measures volume
	duration  bool
}

type image struct {
	rules []cRule
	fars  map[uint32]kFAR
	qers  map[uint32]kQER
	urrs  map[uint32]urrConf
}

// portsOf is what compiling needs to know of the cube's ports.
type portsOf map[string]int // name → index

func compileSession(s *model.Session, c *cube.Cube, cfg *model.Config) (*image, error) {
	img := &image{fars: map[uint32]kFAR{}, qers: map[uint32]kQER{}, urrs: map[uint32]urrConf{}}
	own := func(id uint32) Owner { return Owner{SEID: s.SEID, ID: id} }
	for _, f := range s.FARs {
		img.fars[f.ID] = compileFAR(&f, c, own(f.ID))
	}
	for _, q := range s.QERs {
		img.qers[q.ID] = compileQER(&q, cfg, own(q.ID))
	}
	for _, u := range s.URRs {
		img.urrs[u.ID] = compileURR(&u)
	}
	for i := range s.PDRs {
		rules, err := compilePDR(&s.PDRs[i], s.SEID)
		if err != nil {
			return nil, cube.Within("pdrs", err)
		}
		img.rules = append(img.rules, rules...)
	}
	sort.SliceStable(img.rules, func(i, j int) bool {
		a, b := img.rules[i], img.rules[j]
		if a.prec != b.prec {
			return a.prec < b.prec
		}
		if a.key.PDR != b.key.PDR {
			return a.key.PDR < b.key.PDR
		}
		return a.key.Variant < b.key.Variant
	})
	return img, nil
}

func compileFAR(f *model.FAR, c *cube.Cube, o Owner) kFAR {
	var k kFAR
	k.Owner = o
	for _, a := range f.Action {
		k.Action |= map[string]uint8{"forw": farForw, "drop": farDrop, "buff": farBuff, "nocp": farNOCP, "dupl": farDupl}[a]
	}
	k.kFwd = compileFwd(k.Action, c.Port(f.Port), f.OuterHeader, f.ToS)
	if d := f.Duplicate; d != nil && f.HasAction("dupl") {
		k.Dup = compileFwd(farForw, c.Port(d.Port), d.OuterHeader, d.ToS)
	}
	return k
}

// compileFwd is where a FAR (or its duplicate) sends packets: the port, the
// outer header, its ToS.
func compileFwd(action uint8, p *cube.Port, oh *model.OuterHeader, tos *uint8) kFwd {
	k := kFwd{Action: action}
	if p != nil {
		k.Port = uint8(p.Index)
	}
	if oh != nil {
		a := netip.MustParseAddr(oh.Address)
		binary.BigEndian.PutUint32(k.TEID[:], oh.TEID)
		if a.Is4() {
			k.OHC = ohcGTP4
			b := a.As4()
			copy(k.Peer[:], b[:])
		} else {
			k.OHC = ohcGTP6
			k.Peer = a.As16()
		}
	}
	if tos != nil {
		k.Action |= farToS
		k.ToS = *tos
	}
	return k
}

// mbr converts a rate in kbit/s into the GCRA's cost per byte (ns << 16)
// and burst tolerance (ns) for a burst of burstMs at the rate, at least
// 3000 octets.
func mbr(kbps uint64, burstMs uint32) (cost, tau uint64) {
	if kbps == 0 {
		return 0, 0
	}
	cost = (8_000_000 << 16) / kbps
	burst := max(3000, kbps*uint64(burstMs)/8)
	return cost, burst * 8_000_000 / kbps
}

func compileQER(q *model.QER, cfg *model.Config, o Owner) kQER {
	k := kQER{QFI: q.QFI, Owner: o}
	if q.GateUL == "closed" {
		k.Gate |= qerULClosed
	}
	if q.GateDL == "closed" {
		k.Gate |= qerDLClosed
	}
	if q.MBRUL > 0 {
		k.Gate |= qerMBRUL
		k.Cost[0], k.Tau[0] = mbr(q.MBRUL, cfg.MBRBurstMs)
	}
	if q.MBRDL > 0 {
		k.Gate |= qerMBRDL
		k.Cost[1], k.Tau[1] = mbr(q.MBRDL, cfg.MBRBurstMs)
	}
	return k
}

func compileURR(u *model.URR) urrConf {
	c := urrConf{period: u.Period, volume: u.Measures("volume"), duration: u.Measures("duration")}
	if !u.HasTrigger("periodic") {
		c.period = 0
	}
	if u.HasTrigger("time_threshold") {
		c.timeTh = u.TimeThreshold
	}
	if u.HasTrigger("time_quota") || u.TimeQuota > 0 {
		c.timeQuota = u.TimeQuota
	}
	vol := func(v *model.Volume, bits [3]uint32, vals *[3]int64) {
		if v == nil {
			return
		}
		for i, p := range []*uint64{v.Total, v.Uplink, v.Downlink} {
			if p != nil {
				c.flags |= bits[i]
				vals[i] = int64(min(*p, 1<<62))
			}
		}
	}
	if u.HasTrigger("volume_threshold") {
		vol(u.VolumeThreshold, [3]uint32{urrThTotal, urrThUL, urrThDL}, &c.th)
	}
	// A volume quota is enforced whether or not its trigger asks for a
	// report (TS 29.244 5.2.2.2.1).
	vol(u.VolumeQuota, [3]uint32{urrQTotal, urrQUL, urrQDL}, &c.q)
	return c
}

// compilePDR makes a PDR's kernel rules: one per SDF filter and port-range
// combination (one matching everything if it has none), times its QFIs.
func compilePDR(p *model.PDR, seid uint64) ([]cRule, error) {
	var base kRule
	var lists []listKey
	if p.Uplink() {
		base.Flags |= ruleUL
	}
	if p.FTEID != nil {
		base.Flags |= ruleGTP
		lists = []listKey{{keyTEID, uint64(teidKey(p.FTEID.TEID))}}
	}
	if p.UEIPv4 != "" {
		a := netip.MustParseAddr(p.UEIPv4).As4()
		if p.FTEID != nil {
			base.Flags |= ruleUE4
			base.UE4 = a
		} else {
			lists = append(lists, listKey{keyUE4, uint64(binary.NativeEndian.Uint32(a[:]))})
		}
	}
	if p.UEIPv6 != "" {
		a := netip.MustParsePrefix(p.UEIPv6).Addr().As16()
		if p.FTEID != nil {
			base.Flags |= ruleUE6
			copy(base.UE6[:], a[:8])
		} else {
			lists = append(lists, listKey{keyUE6, binary.NativeEndian.Uint64(a[:8])})
		}
	}
	var sdfs []*kSDF
	for _, s := range p.SDF {
		ks, err := compileSDF(&s)
		if err != nil {
			return nil, err
		}
		sdfs = append(sdfs, ks...)
	}
	if len(sdfs) == 0 {
		sdfs = []*kSDF{nil}
	}
	qfis := p.QFI
	if len(qfis) == 0 {
		qfis = []uint8{0}
	}
	var out []cRule
	for _, sdf := range sdfs {
		for _, qfi := range qfis {
			r := cRule{key: ruleKey{p.ID, uint16(len(out))}, prec: p.Precedence, lists: lists,
				rule: base, sdf: sdf, far: p.FAR, qers: p.QERs, urrs: p.URRs}
			r.rule.QFI = qfi
			r.rule.Owner = Owner{SEID: seid, ID: r.key.id()}
			if sdf != nil {
				s := *sdf
				s.Owner = r.rule.Owner
				r.sdf = &s
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// teid is a TEID list key's TEID in host order (the byte swap of teidKey
// is its own inverse).
func (k listKey) teid() uint32 { return teidKey(uint32(k.K)) }

// teidKey is the TEID as the fast path's key holds it: network order.
func teidKey(teid uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], teid)
	return binary.NativeEndian.Uint32(b[:])
}

func compileSDF(s *model.SDF) ([]*kSDF, error) {
	var base kSDF
	if s.ToS != nil {
		base.Flags |= sdfToS
		base.ToS, base.ToSMask = s.ToS.Value&s.ToS.Mask, s.ToS.Mask
	}
	if s.SPI != nil {
		base.Flags |= sdfSPI
		binary.BigEndian.PutUint32(base.SPI[:], *s.SPI)
	}
	if s.FlowLabel != nil {
		base.Flags |= sdfFL
		base.FlowLabel = *s.FlowLabel
	}
	if s.FlowDescription == "" {
		return []*kSDF{&base}, nil
	}
	f, err := model.ParseFlow(s.FlowDescription)
	if err != nil {
		return nil, err
	}
	if f.Proto != 0 {
		base.Flags |= sdfProto
		base.Proto = f.Proto
	}
	prefix := func(p netip.Prefix, addr, mask *[16]byte) {
		a := p.Addr()
		if a.Is4() {
			b := a.As4()
			copy(addr[:], b[:])
			m := maskBytes(p.Bits(), 4)
			copy(mask[:], m)
			return
		}
		base.Flags |= sdfV6
		*addr = a.As16()
		copy(mask[:], maskBytes(p.Bits(), 16))
	}
	if f.Remote.IsValid() {
		base.Flags |= sdfRemote
		prefix(f.Remote, &base.Remote, &base.RemoteMask)
	}
	if f.Local.IsValid() {
		base.Flags |= sdfLocal
		prefix(f.Local, &base.Local, &base.LocalMask)
	}
	rports, lports := f.RemotePorts, f.LocalPorts
	if len(rports) == 0 {
		rports = []model.PortRange{{}}
	}
	if len(lports) == 0 {
		lports = []model.PortRange{{}}
	}
	var out []*kSDF
	for _, r := range rports {
		for _, l := range lports {
			k := base
			if len(f.RemotePorts) > 0 {
				k.Flags |= sdfRPort
				k.RPortLo, k.RPortHi = r.Lo, r.Hi
			}
			if len(f.LocalPorts) > 0 {
				k.Flags |= sdfLPort
				k.LPortLo, k.LPortHi = l.Lo, l.Hi
			}
			out = append(out, &k)
		}
	}
	return out, nil
}

func maskBytes(bits, n int) []byte {
	m := make([]byte, n)
	for i := range m {
		switch {
		case bits >= 8:
			m[i] = 0xff
			bits -= 8
		case bits > 0:
			m[i] = byte(0xff << (8 - bits))
			bits = 0
		}
	}
	return m
}
