package ddos

// The fast path's layouts (mirrors of bpf/ddos.bpf.c) and the maps of each
// blacklist.

import (
	"net/netip"

	"github.com/edgenf/edgenf/internal/nf/counters"
)

const (
	fSrcExact   = 1 << 0
	fSrcLPM     = 1 << 1
	fDstExact   = 1 << 2
	fDstLPM     = 1 << 3
	fRate       = 1 << 4
	fScan       = 1 << 5
	fDirIngress = 1 << 6
	fDirEgress  = 1 << 7
	fMirror     = 1 << 8
	fSrcLPM4    = 1 << 9
	fDstLPM4    = 1 << 10
)

// Block reasons.
const (
	ReasonScan = 1
	ReasonRate = 2
)

var reasonNames = map[uint32]string{ReasonScan: "port-scan", ReasonRate: "rate"}

type addrKey [16]byte

type lpmKey struct {
	Prefixlen uint32
	Addr      [16]byte `btf:"a"`
}

type entryVal struct {
	Expires uint64
	Packets uint64
	Bytes   uint64
}

type blockVal struct {
	Until   uint64
	Since   uint64
	Packets uint64
	Bytes   uint64
	Reason  uint32
	Count   uint32
}

type cfgVal struct {
	Flags          uint32
	RateThreshold  uint32
	RateWindowNs   uint64
	RateBlockNs    uint64
	ScanDistinct   uint32
	ScanSequential uint32
	ScanWindowNs   uint64
	ScanBlockNs    uint64
	MirrorIfindex  uint32
	Pad            uint32
	Src4, Dst4     tabCfg // the IPv4 tables' prefix lengths
}

// The cube's event counters, in the order of enum dd_stat.
var ddCounters = counters.Named{Map: "dd_stats", Names: []string{"passed", "dropped_src_blacklist",
	"dropped_dst_blacklist", "dropped_blocked", "mirrored", "events", "blocked_scan", "blocked_rate"}}

func key16(a netip.Addr) addrKey { return a.As16() }

// side is one blacklist: its table and maps. IPv6 entries go to the exact
// hash or the trie; IPv4 ones to the IPv4 table (slots, vals: table.go) or,
// when it has no place for them, to the IPv4 fallback trie (lpm4).
type side struct {
	table, exact, lpm   string
	slots, vals, lpm4   string
	fExact, fLPM, fLPM4 uint32
}

var sides = []side{
	{"blacklist_src", "dd_src_exact", "dd_src_lpm", "dd_src_t4", "dd_src_t4v", "dd_src_lpm4", fSrcExact, fSrcLPM, fSrcLPM4},
	{"blacklist_dst", "dd_dst_exact", "dd_dst_lpm", "dd_dst_t4", "dd_dst_t4v", "dd_dst_lpm4", fDstExact, fDstLPM, fDstLPM4},
}

func sideOf(table string) *side {
	for i := range sides {
		if sides[i].table == table {
			return &sides[i]
		}
	}
	return nil
}

func isExact(p netip.Prefix) bool { return p.Bits() == p.Addr().BitLen() }

func lpmOf(p netip.Prefix) lpmKey {
	k := lpmKey{Prefixlen: uint32(p.Bits()), Addr: p.Addr().As16()}
	if p.Addr().Is4() {
		k.Prefixlen += 96
	}
	return k
}
