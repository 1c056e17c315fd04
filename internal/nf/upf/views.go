package upf

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp/agent"
)

// maxListed bounds the sessions a view lists.
const maxListed = 10000

// SessionView is one session as the sessions view shows it.
type SessionView struct {
	SEID   uint64 `json:"seid"`
	CPSEID uint64 `json:"cp_seid,omitempty"`
	Node   string `json:"node,omitempty"`
	UEIPv4 string `json:"ue_ipv4,omitempty"`
	UEIPv6 string `json:"ue_ipv6,omitempty"`
	// TEIDs are the session's local tunnels, Tunnels its peers'
	// ("teid@address").
	TEIDs     []string `json:"teids,omitempty"`
	Tunnels   []string `json:"tunnels,omitempty"`
	Rules     string   `json:"rules"`
	ULPackets uint64   `json:"ul_packets"`
	ULBytes   uint64   `json:"ul_bytes"`
	DLPackets uint64   `json:"dl_packets"`
	DLBytes   uint64   `json:"dl_bytes"`
	Buffered  int      `json:"buffered"`
}

// PDRView is one PDR with its counters.
type PDRView struct {
	SEID       uint64 `json:"seid"`
	PDR        uint16 `json:"pdr"`
	Direction  string `json:"direction"`
	Precedence uint32 `json:"precedence"`
	FAR        string `json:"far"`
	Rules      int    `json:"kernel_rules"`
	Packets    uint64 `json:"packets"`
	Bytes      uint64 `json:"bytes"`
}

// URRView is one URR's current measurement (since its last report).
type URRView struct {
	SEID      uint64 `json:"seid"`
	URR       uint32 `json:"urr"`
	SEQN      uint32 `json:"next_seqn"`
	Since     string `json:"since"`
	ULPackets uint64 `json:"ul_packets"`
	ULBytes   uint64 `json:"ul_bytes"`
	DLPackets uint64 `json:"dl_packets"`
	DLBytes   uint64 `json:"dl_bytes"`
	Quota     string `json:"quota,omitempty"`
}

// Counter is one of the cube's counters.
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

var views = []cube.View{
	{Name: "sessions", Doc: "Sessions (at most 10000, by SEID): SMF, UE addresses, tunnels, rules, uplink and downlink counters, buffered packets.",
		Item: &SessionView{}, List: listSessions},
	{Name: "pdrs", Doc: "PDRs of every session (at most 10000 sessions) with their packet and byte counters.", Item: &PDRView{}, List: listPDRs},
	{Name: "urrs", Doc: "URRs of every session (at most 10000 sessions): the usage measured since the last report.", Item: &URRView{}, List: listURRs},
	{Name: "associations", Doc: "PFCP associations with SMFs: Node ID, address, recovery time, sessions, last heartbeat, state.",
		Item: &agent.AssociationStatus{}, List: listAssociations},
	{Name: "counters", Doc: "Fast-path counters (packets, drops by reason), slow-path work and PFCP messages by type and cause.",
		Item: &Counter{}, List: listCounters},
	{Name: "neighbours", Doc: "Next hops learned on the ports (ARP, NDP).", Item: &NeighbourInfo{}, List: listNeighbours},
}

var actions = []cube.Action{
	{Name: "reset_counters", Doc: "Zero the fast path's counters (not the sessions' usage).", Do: resetCounters},
}

// seids lists the sessions in SEID order, at most maxListed.
func (ctl *controller) seids() []uint64 {
	out := make([]uint64, 0, len(ctl.sessions))
	for s := range ctl.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	if len(out) > maxListed {
		out = out[:maxListed]
	}
	return out
}

// pdrCount sums the counters of a PDR's kernel rules, and of those it had
// before a change replaced them.
func (ctl *controller) pdrCount(seid uint64, st *sessState, pdr uint16) kCount {
	c := ctl.retired[ref{seid, uint32(pdr)}]
	for k, r := range st.rules {
		if k.PDR != pdr {
			continue
		}
		if x, err := readCount(ctl.maps.ruleCount, r.idx, r.v.Flags); err == nil {
			addCount(&c, x)
		}
	}
	ctl.drainingCount(seid, pdr, &c)
	return c
}

func listSessions(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	out := []SessionView{}
	for _, seid := range ctl.seids() {
		st := ctl.sessions[seid]
		s := st.sess
		v := SessionView{SEID: seid, CPSEID: s.CPSEID, Node: s.Node, Buffered: len(ctl.buffers.bySession[seid]),
			Rules: fmt.Sprintf("%d PDR, %d FAR, %d QER, %d URR", len(s.PDRs), len(s.FARs), len(s.QERs), len(s.URRs))}
		seen := map[string]bool{}
		for _, p := range s.PDRs {
			if p.UEIPv4 != "" {
				v.UEIPv4 = p.UEIPv4
			}
			if p.UEIPv6 != "" {
				v.UEIPv6 = p.UEIPv6
			}
			if p.FTEID != nil && !seen[hex32(p.FTEID.TEID)] {
				seen[hex32(p.FTEID.TEID)] = true
				v.TEIDs = append(v.TEIDs, hex32(p.FTEID.TEID))
			}
			cnt := ctl.pdrCount(seid, st, p.ID)
			v.ULPackets += cnt.Pkts[0]
			v.ULBytes += cnt.Bytes[0]
			v.DLPackets += cnt.Pkts[1]
			v.DLBytes += cnt.Bytes[1]
		}
		for _, f := range s.FARs {
			if f.OuterHeader != nil {
				t := hex32(f.OuterHeader.TEID) + "@" + f.OuterHeader.Address
				if !seen[t] {
					seen[t] = true
					v.Tunnels = append(v.Tunnels, t)
				}
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func listPDRs(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	out := []PDRView{}
	for _, seid := range ctl.seids() {
		st := ctl.sessions[seid]
		for _, p := range st.sess.PDRs {
			dir := "downlink"
			if p.Uplink() {
				dir = "uplink"
			}
			far := fmt.Sprint(p.FAR)
			if f := st.sess.Far(p.FAR); f != nil {
				far += " " + strings.Join(f.Action, "+")
			}
			n, _ := p.KernelRules()
			cnt := ctl.pdrCount(seid, st, p.ID)
			out = append(out, PDRView{SEID: seid, PDR: p.ID, Direction: dir, Precedence: p.Precedence, FAR: far, Rules: n,
				Packets: cnt.Pkts[0] + cnt.Pkts[1], Bytes: cnt.Bytes[0] + cnt.Bytes[1]})
		}
	}
	return out, nil
}

func listURRs(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	out := []URRView{}
	for _, seid := range ctl.seids() {
		st := ctl.sessions[seid]
		ids := make([]uint32, 0, len(st.urrs))
		for id := range st.urrs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			idx := st.urrs[id].idx
			r := ctl.usage.reps[idx]
			if r == nil {
				continue
			}
			cur := ctl.urrTotal(idx)
			v := URRView{SEID: seid, URR: id, SEQN: r.SEQN, Since: time.Unix(0, r.Start).UTC().Format(time.RFC3339),
				ULPackets: cur.Pkts[0] - r.Base.Pkts[0], ULBytes: cur.Bytes[0] - r.Base.Bytes[0],
				DLPackets: cur.Pkts[1] - r.Base.Pkts[1], DLBytes: cur.Bytes[1] - r.Base.Bytes[1]}
			if r.Flags&repQuotaHit != 0 {
				v.Quota = "exhausted"
			} else if r.Flags&(urrQTotal|urrQUL|urrQDL) != 0 {
				v.Quota = "available"
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func listAssociations(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	a := ctl.agent
	perNode := map[string]int{}
	for _, st := range ctl.sessions {
		perNode[st.sess.Node]++
	}
	ctl.mu.Unlock()
	var out []agent.AssociationStatus
	if a != nil {
		out = a.Associations()
	} else {
		rows, err := associationsTable.Entries(c)
		if err != nil {
			return nil, err
		}
		for _, v := range rows {
			out = append(out, agent.AssociationStatus{Association: *v.(*model.Association), State: "no PFCP endpoint"})
		}
	}
	for i := range out {
		out[i].Sessions = perNode[out[i].Node]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	if out == nil {
		out = []agent.AssociationStatus{}
	}
	return out, nil
}

// counters reads the fast path's counters, the slow path's and the
// agent's.
func (ctl *controller) counters() []Counter {
	var out []Counter
	var per []uint64
	t := ctl.traffic()
	// statNames' first four: counters.go, traffic
	fwd := []uint64{t.Pkts[0], t.Bytes[0], t.Pkts[1], t.Bytes[1]}
	for i, n := range statNames {
		var s uint64
		if err := ctl.maps.stats.Lookup(uint32(i), &per); err == nil {
			for _, x := range per {
				s += x
			}
		}
		if i < len(fwd) {
			s += fwd[i]
		}
		out = append(out, Counter{n, s})
	}
	sl := ctl.slow
	for _, c := range []Counter{
		{"echo_replies", sl.EchoReplies}, {"error_indications_sent", sl.ErrorIndications},
		{"error_indications_limited", sl.ErrorIndLimited}, {"error_indications_reported", sl.ErrorIndReceived},
		{"end_markers_sent", sl.EndMarkers}, {"buffer_released", sl.BufferReleased}, {"buffer_drops", sl.BufferDrops},
		{"neighbour_requests", sl.NeighRequests}, {"neighbours_learned", sl.NeighLearned}, {"neighbour_drops", sl.NeighDrops},
		{"usage_reports", sl.Reports}, {"reports_undelivered", sl.ReportsUndelivered}, {"urr_usage_reset", sl.UsageReset},
		{"sessions", uint64(len(ctl.sessions))}, {"buffered", uint64(ctl.buffers.total)},
	} {
		out = append(out, c)
	}
	if ctl.agent != nil {
		st := ctl.agent.Snapshot()
		for _, m := range []struct {
			prefix string
			v      map[string]uint64
		}{{"pfcp_received", st.Received}, {"pfcp_sent", st.Sent}, {"pfcp_cause", st.Causes}} {
			keys := make([]string, 0, len(m.v))
			for k := range m.v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				out = append(out, Counter{m.prefix + " " + k, m.v[k]})
			}
		}
		out = append(out, Counter{"pfcp_duplicates", st.Duplicates}, Counter{"pfcp_discarded", st.Discarded},
			Counter{"pfcp_timeouts", st.Timeouts}, Counter{"pfcp_reports_dropped", st.ReportsDropped})
	}
	return out
}

func listCounters(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return ctl.counters(), nil
}

func resetCounters(h cube.Handle, c *cube.Cube, _ any) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	for i := range statNames {
		if err := ctl.maps.stats.Put(uint32(i), make([]uint64, n)); err != nil {
			return nil, err
		}
	}
	if err := ctl.resetTraffic(); err != nil {
		return nil, err
	}
	ctl.slow = slowStats{}
	return map[string]string{"result": "counters reset"}, nil
}
