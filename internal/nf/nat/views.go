package nat

import (
	"net/netip"
	"sort"

	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/nf/conntrack"
	"golang.org/x/sys/unix"
)

// Session is one translated flow.
type Session struct {
	Proto string `json:"proto"`
	Kind  string `json:"kind"` // snat, masquerade, dnat, port-forward, static
	State string `json:"state"`
	// Inside is the inside host's endpoint, Outside its translated one,
	// Remote the far end.
	Inside  string  `json:"inside"`
	Outside string  `json:"outside"`
	Remote  string  `json:"remote"`
	Rule    int     `json:"rule,omitempty"`
	Packets uint64  `json:"packets"`
	Bytes   uint64  `json:"bytes"`
	Idle    float64 `json:"idle_seconds"`
	Expired bool    `json:"expired,omitempty"`
}

func sessions(h cube.Handle) ([]Session, error) {
	m, err := h.Map("nat_sess")
	if err != nil {
		return nil, err
	}
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	to := ctl.cfg.Timeouts.Kernel()
	ctl.mu.Unlock()
	now := ktime.Now()
	all := map[conntrack.Tuple]sess{}
	if err := bpfmap.Each(m, func(k conntrack.Tuple, s sess) bool {
		all[k] = s
		return true
	}); err != nil {
		return nil, err
	}
	out := []Session{}
	for k, s := range all {
		if s.Flags&flagOrig == 0 {
			continue
		}
		x := Session{Proto: conntrack.ProtoName(k.Proto), Kind: kindNames[s.Kind], State: conntrack.StateName(s.Conn.State),
			Rule: int(s.Rule), Packets: s.Packets, Bytes: s.Bytes, Idle: s.Conn.IdleSeconds(now), Expired: s.Conn.Expired(to, now)}
		if r, ok := all[s.Other]; ok {
			x.Packets += r.Packets
			x.Bytes += r.Bytes
		}
		tr := conntrack.Tuple{Saddr: k.Saddr, Daddr: k.Daddr, Sport: k.Sport, Dport: k.Dport, Proto: k.Proto}
		if s.Which == 0 { // outbound: source rewritten
			tr.Saddr, tr.Sport = s.NewAddr, s.NewPort
			x.Inside, x.Outside, x.Remote = k.Src(), tr.Src(), k.Dst()
		} else { // inbound: destination rewritten
			tr.Daddr, tr.Dport = s.NewAddr, s.NewPort
			x.Remote, x.Outside, x.Inside = k.Src(), k.Dst(), tr.Dst()
			if k.Proto == unix.IPPROTO_ICMP {
				x.Outside, x.Inside = netip.AddrFrom4(k.Daddr).String(), netip.AddrFrom4(s.NewAddr).String()
			}
		}
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Inside != out[j].Inside {
			return out[i].Inside < out[j].Inside
		}
		return out[i].Remote < out[j].Remote
	})
	return out, nil
}

// Status tells where the NAT sits and the masquerade address it uses.
type Status struct {
	AttachedTo        string `json:"attached_to"`
	Masquerade        bool   `json:"masquerade"`
	MasqueradeAddress string `json:"masquerade_address"`
	PortRange         string `json:"port_range"`
}
