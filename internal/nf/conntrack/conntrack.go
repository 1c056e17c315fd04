// Package conntrack mirrors bpf/include/edgenf/conntrack.h, the connection
// tracking library the NAT and the firewall share: states, per-state
// timeouts, tuples, and helpers to read connection tables.
package conntrack

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/ktime"
	"golang.org/x/sys/unix"
)

// States, as enum ct_state.
const (
	None = iota
	TCPSynSent
	TCPSynRecv
	TCPEstablished
	TCPFinWait
	TCPTimeWait
	TCPClose
	UDPUnreplied
	UDPReplied
	ICMP
	Other
	NStates
)

var stateNames = [NStates]string{"none", "syn-sent", "syn-recv", "established", "fin-wait", "time-wait", "close",
	"udp-unreplied", "udp-replied", "icmp", "other"}

// StateName names a connection state.
func StateName(s uint8) string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state-%d", s)
}

// Packet states, as enum ct_pkt_state (firewall match values).
const (
	PktNew = iota
	PktEstablished
	PktRelated
	PktInvalid
	PktNStates
)

// PktStateNames are the names rules use for packet states.
var PktStateNames = []string{"new", "established", "related", "invalid"}

// Flags of struct ct_conn.
const (
	FlagReplied  = 1
	FlagFinOrig  = 2
	FlagFinReply = 4
)

// Timeouts are per-state idle timeouts in seconds; zero means the default.
type Timeouts struct {
	TCPSynSent     uint32 `json:"tcp_syn_sent,omitempty" maximum:"604800"`
	TCPSynRecv     uint32 `json:"tcp_syn_recv,omitempty" maximum:"604800"`
	TCPEstablished uint32 `json:"tcp_established,omitempty" maximum:"604800"`
	TCPFinWait     uint32 `json:"tcp_fin_wait,omitempty" maximum:"604800"`
	TCPTimeWait    uint32 `json:"tcp_time_wait,omitempty" maximum:"604800"`
	TCPClose       uint32 `json:"tcp_close,omitempty" maximum:"604800"`
	UDP            uint32 `json:"udp,omitempty" maximum:"604800"`
	UDPReplied     uint32 `json:"udp_replied,omitempty" maximum:"604800"`
	ICMP           uint32 `json:"icmp,omitempty" maximum:"604800"`
	Other          uint32 `json:"other,omitempty" maximum:"604800"`
}

// Defaults are the timeouts used for zero fields (as in conntrack.h).
var Defaults = [NStates]uint32{30, 120, 60, 7440, 120, 120, 10, 30, 180, 30, 600}

// MaxTimeout bounds any timeout (one week).
const MaxTimeout = 7 * 24 * 3600

// Validate checks the bounds; field is the name to report errors under.
func (t *Timeouts) Validate() error {
	if t == nil {
		return nil
	}
	for i, v := range t.Kernel().Sec {
		if v > MaxTimeout {
			return fmt.Errorf("%s: %d s is more than %d s", stateNames[i], v, MaxTimeout)
		}
	}
	return nil
}

// KTimeouts mirrors struct ct_timeouts.
type KTimeouts struct {
	Sec [NStates]uint32
	_   uint32
}

// Kernel converts to the map layout.
func (t *Timeouts) Kernel() KTimeouts {
	var k KTimeouts
	if t == nil {
		return k
	}
	k.Sec = [NStates]uint32{0, t.TCPSynSent, t.TCPSynRecv, t.TCPEstablished, t.TCPFinWait, t.TCPTimeWait, t.TCPClose,
		t.UDP, t.UDPReplied, t.ICMP, t.Other}
	return k
}

// Timeout returns the effective timeout of a state, in seconds.
func (k KTimeouts) Timeout(state uint8) uint32 {
	if int(state) >= NStates {
		return 30
	}
	if k.Sec[state] != 0 {
		return k.Sec[state]
	}
	return Defaults[state]
}

// Tuple mirrors struct ct_tuple (addresses and ports in network order).
type Tuple struct {
	Saddr [4]byte
	Daddr [4]byte
	Sport [2]byte
	Dport [2]byte
	Proto uint8
	Dir   uint8
	_     uint16
}

// Src and Dst render an endpoint as addr:port (addr for protocols without
// ports; ICMP shows the echo identifier as id).
func (t Tuple) Src() string { return endpoint(t.Saddr, t.Sport, t.Proto) }
func (t Tuple) Dst() string {
	if t.Proto == unix.IPPROTO_ICMP {
		return netip.AddrFrom4(t.Daddr).String()
	}
	return endpoint(t.Daddr, t.Dport, t.Proto)
}

func endpoint(a [4]byte, p [2]byte, proto uint8) string {
	return endpointOf(netip.AddrFrom4(a), p, proto)
}

func endpointOf(ip netip.Addr, p [2]byte, proto uint8) string {
	port := binary.BigEndian.Uint16(p[:])
	switch proto {
	case unix.IPPROTO_TCP, unix.IPPROTO_UDP:
		return netip.AddrPortFrom(ip, port).String()
	case unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6:
		return fmt.Sprintf("%s id %d", ip, port)
	}
	return ip.String()
}

// Tuple46 mirrors struct ct_tuple46: either family, IPv4 addresses in the
// first four bytes.
type Tuple46 struct {
	Saddr  [16]byte
	Daddr  [16]byte
	Sport  [2]byte
	Dport  [2]byte
	Proto  uint8
	Family uint8
	_      uint16
}

func (t Tuple46) addr(a [16]byte) netip.Addr {
	if t.Family == 4 {
		return netip.AddrFrom4([4]byte(a[:4]))
	}
	return netip.AddrFrom16(a)
}

// Reverse is what the other end sends (ICMP echo keeps its identifier).
func (t Tuple46) Reverse() Tuple46 {
	r := Tuple46{Saddr: t.Daddr, Daddr: t.Saddr, Sport: t.Dport, Dport: t.Sport, Proto: t.Proto, Family: t.Family}
	if t.Proto == unix.IPPROTO_ICMP || t.Proto == unix.IPPROTO_ICMPV6 {
		r.Sport, r.Dport = t.Sport, t.Dport
	}
	return r
}

// Src and Dst render the endpoints like Tuple's.
func (t Tuple46) Src() string { return endpointOf(t.addr(t.Saddr), t.Sport, t.Proto) }
func (t Tuple46) Dst() string {
	if t.Proto == unix.IPPROTO_ICMP || t.Proto == unix.IPPROTO_ICMPV6 {
		return t.addr(t.Daddr).String()
	}
	return endpointOf(t.addr(t.Daddr), t.Dport, t.Proto)
}

// ProtoName names an IP protocol.
func ProtoName(p uint8) string {
	switch p {
	case unix.IPPROTO_TCP:
		return "tcp"
	case unix.IPPROTO_UDP:
		return "udp"
	case unix.IPPROTO_ICMP:
		return "icmp"
	case unix.IPPROTO_ICMPV6:
		return "icmpv6"
	}
	return fmt.Sprint(p)
}

// Conn mirrors struct ct_conn.
type Conn struct {
	LastSeen uint64
	State    uint8
	Flags    uint8
	_        uint16
	_        uint32
}

// Expired reports whether c idled past its state's timeout at now.
func (c Conn) Expired(k KTimeouts, now uint64) bool {
	return now > c.LastSeen && now-c.LastSeen > uint64(k.Timeout(c.State))*1e9
}

// IdleSeconds is how long c has been idle at now.
func (c Conn) IdleSeconds(now uint64) float64 {
	if now < c.LastSeen {
		return 0
	}
	return float64(now-c.LastSeen) / 1e9
}

// Sweep is the aging loop of a connection table (a hash map from Tuple to
// V): it deletes, in batches, the connections that idled past their state's
// timeout under to, or every entry with all, and returns how many
// connections it deleted. conn returns an entry's connection state. A table
// that keeps a connection under both its tuples (the NAT's, one entry per
// direction) also says which entry is the reply's, and gives the other
// tuple from the original's: the pair goes together, judged by the
// original, and counts once.
func Sweep[K comparable, V any](m *ebpf.Map, to KTimeouts, all bool, conn func(v V) (c Conn, reply bool, other K)) (int, error) {
	now := ktime.Now()
	var dead []K
	var none K
	n := 0
	if err := bpfmap.Each(m, func(k K, v V) bool {
		c, reply, other := conn(v)
		switch {
		case reply:
			if all { // orphaned ones too
				dead = append(dead, k)
			}
		case all || c.Expired(to, now):
			dead = append(dead, k)
			if other != none {
				dead = append(dead, other)
			}
			n++
		}
		return true
	}); err != nil {
		return 0, err
	}
	return n, bpfmap.Delete(m, dead)
}
