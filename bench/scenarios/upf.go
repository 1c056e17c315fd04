package scenarios

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/edgenf/edgenf/bench/kern"
	"github.com/edgenf/edgenf/bench/scenario"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/nf/upf"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/tenant"
)

// The upf groups (issue 14's speed targets). Traffic is IPv4 UDP whose
// inner packets are 64-byte frames (-size): uplink G-PDUs of 100 bytes
// (outer IPv4/UDP/GTP-U without options), downlink plain frames.
//
//	upf-ul, upf-dl:  the upf cube with one session (PDR, FAR, a URR
//	                 counting volume) against the raw XDP redirect of the
//	                 same frames (target: 0.85).
//	upf-scale-ul, upf-scale-dl: 100,000 sessions with random TEIDs and UE
//	                 addresses, the generator cycling through all of them,
//	                 against one session (target: 0.8). The sessions are
//	                 set up in a random order of their own (upfEstablished):
//	                 the generator visits them in no order of their
//	                 establishment (kernel entries, rules and counter
//	                 blocks), nor of their TEIDs' or addresses' slots.
//	upf-dl-pool-*:   the same downlink with the UE addresses in the cube's
//	                 UE pool (10.44.0.0/15: an array lookup instead of a
//	                 hash), in upf-dl (1 session), upf-scale-dl (1 and
//	                 100,000 random addresses of the pool) and upf-tc-dl
//	                 (1 session at TC).
//	upf-tc-ul, upf-tc-dl: the upf cube at TC against a portfwd cube at TC
//	                 on the same frames (what the upf adds to the skb path).
//	upf-p4-ul, upf-p4-dl: the upf cube against examples/p4/upf.p4 compiled
//	                 by edgenf, on the same path and frames (target: 1.0).
//
// The path: a1 is the upf's port facing the generator (n3 uplink, n6
// downlink), b0 the one facing the sink; the next hop behind b0 is b1, whose
// MAC the upf learns from an ARP reply injected into its port.
func init() {
	for _, dl := range []bool{false, true} {
		dir, doc := "ul", "uplink: GTP-U decapsulated to N6"
		if dl {
			dir, doc = "dl", "downlink: encapsulated in GTP-U to the gNB"
		}
		dl := dl
		for _, s := range []scenario.Scenario{
			{Name: "xdp-redirect-" + dir, Group: "upf-" + dir, Baseline: true, Quick: true,
				Doc: "raw XDP redirect a1 → b0 of the same frames (" + map[bool]string{false: "GTP-U, 100 bytes", true: "64 bytes"}[dl] + ")",
				Setup: func(e *scenario.Env) (*scenario.Topology, error) {
					t, err := scenario.SetupXDPRedirect(e)
					if err != nil {
						return nil, err
					}
					return t, upfTraffic(e, t, dl, upfFlows(1))
				}},
			{Name: "upf-" + dir + "-xdp", Group: "upf-" + dir, Order: 10, Quick: true,
				Doc:   "edgenf upf cube at XDP, 1 session, " + doc,
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupUPF(e, datapath.XDP, dl, 1, hashKeys) }},
			{Name: "upf-" + dir + "-tc", Group: "upf-" + dir, Order: 20,
				Doc:   "edgenf upf cube at TC, 1 session, " + doc,
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupUPF(e, datapath.TC, dl, 1, hashKeys) }},
			{Name: "upf-" + dir + "-1", Group: "upf-scale-" + dir, Baseline: true, Quick: true,
				Doc:   "edgenf upf cube at XDP, 1 session, " + doc,
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupUPF(e, datapath.XDP, dl, 1, hashKeys) }},
			{Name: "upf-" + dir + "-100k", Group: "upf-scale-" + dir, Order: 10, Quick: true, Param: upfScale,
				Doc: "edgenf upf cube at XDP, 100,000 sessions (random TEIDs and UE addresses; 20,000 in quick mode), " +
					"the traffic spread over all of them in an order independent of their establishment",
				Setup: func(e *scenario.Env) (*scenario.Topology, error) {
					return setupUPF(e, datapath.XDP, dl, upfScaleSessions(e), hashKeys)
				}},
			// At TC every frame becomes an skb first: against the XDP
			// redirect the upf at TC measures mostly that. Against the
			// cheapest edgenf cube at TC (a port forwarder) on the same
			// frames, it measures what the upf adds.
			{Name: "portfwd-tc-" + dir, Group: "upf-tc-" + dir, Baseline: true,
				Doc: "one portfwd cube at TC forwarding the same frames (" + map[bool]string{false: "GTP-U, 100 bytes", true: "64 bytes"}[dl] + ")",
				Setup: func(e *scenario.Env) (*scenario.Topology, error) {
					t, err := setupChain(e, datapath.TC, 1, 1)
					if err != nil {
						return nil, err
					}
					return t, upfTraffic(e, t, dl, upfFlows(1))
				}},
			{Name: "upf-" + dir + "-tc", Group: "upf-tc-" + dir, Order: 10,
				Doc:   "edgenf upf cube at TC, 1 session, " + doc,
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupUPF(e, datapath.TC, dl, 1, hashKeys) }},
			{Name: "p4-upf-" + dir, Group: "upf-p4-" + dir, Baseline: true, Quick: true,
				Doc:   "examples/p4/upf.p4 compiled by edgenf, at XDP, one " + map[bool]string{false: "uplink", true: "downlink"}[dl] + " entry",
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupP4UPF(e, dl) }},
			{Name: "upf-" + dir + "-xdp", Group: "upf-p4-" + dir, Order: 10, Quick: true,
				Doc:   "edgenf upf cube at XDP, 1 session, " + doc,
				Setup: func(e *scenario.Env) (*scenario.Topology, error) { return setupUPF(e, datapath.XDP, dl, 1, hashKeys) }},
		} {
			scenario.Register(s)
		}
	}
	// Uplink on TEIDs the UPF chose and downlink to UE addresses of the
	// cube's UE pool: found by array index, not by hash.
	for _, s := range []scenario.Scenario{
		{Name: "upf-ul-chosen-xdp", Group: "upf-ul", Order: 15, Quick: true,
			Doc: "edgenf upf cube at XDP, 1 session on a TEID the UPF chose (array, not hash), uplink",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.XDP, false, 1, chosenTEIDs)
			}},
		{Name: "upf-ul-chosen-1", Group: "upf-scale-ul", Order: 5, Quick: true,
			Doc: "edgenf upf cube at XDP, 1 session on a TEID the UPF chose, uplink",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.XDP, false, 1, chosenTEIDs)
			}},
		{Name: "upf-ul-chosen-100k", Group: "upf-scale-ul", Order: 20, Quick: true, Param: upfScale,
			Doc: "edgenf upf cube at XDP, 100,000 sessions on TEIDs the UPF chose (random UE addresses; 20,000 in quick mode), " +
				"uplink, the slots and the sessions visited in an order independent of their slots and establishment",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.XDP, false, upfScaleSessions(e), chosenTEIDs)
			}},
		{Name: "upf-dl-pool-xdp", Group: "upf-dl", Order: 15, Quick: true,
			Doc: "edgenf upf cube at XDP, 1 session, its UE address in the cube's UE pool, downlink",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.XDP, true, 1, pooledUEs)
			}},
		{Name: "upf-dl-pool-tc", Group: "upf-tc-dl", Order: 15,
			Doc: "edgenf upf cube at TC, 1 session, its UE address in the cube's UE pool, downlink",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.TC, true, 1, pooledUEs)
			}},
		{Name: "upf-dl-pool-1", Group: "upf-scale-dl", Order: 5, Quick: true,
			Doc: "edgenf upf cube at XDP, 1 session, its UE address in the cube's UE pool, downlink",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.XDP, true, 1, pooledUEs)
			}},
		{Name: "upf-dl-pool-100k", Group: "upf-scale-dl", Order: 15, Quick: true, Param: upfScale,
			Doc: "edgenf upf cube at XDP, 100,000 sessions (20,000 in quick mode) with random TEIDs and random UE " +
				"addresses of the cube's UE pool (10.44.0.0/15), the downlink spread over all of them in an order " +
				"independent of their establishment",
			Setup: func(e *scenario.Env) (*scenario.Topology, error) {
				return setupUPF(e, datapath.XDP, true, upfScaleSessions(e), pooledUEs)
			}},
	} {
		scenario.Register(s)
	}
}

const upfScale = 100000

// upfScaleSessions is how many sessions the scale scenarios set up: fewer
// in quick mode.
func upfScaleSessions(e *scenario.Env) int {
	if e.Quick {
		return 20000
	}
	return upfScale
}

// Addressing: the gNB is on the uplink side (a0) or behind b0 (downlink);
// the UPF's N3 address is on the same subnet.
var (
	upfA1Net = "198.18.0.1/24" // the upf's port on a1
	upfB0Net = "198.18.1.1/24" // the upf's port on b0
	upfPeer  = net.IPv4(198, 18, 1, 2).To4()
	upfGNBUL = net.IPv4(198, 18, 0, 10).To4() // uplink frames' source
)

// upfTEIDRange is the bench cube's TEID range: the SMF's TEIDs below
// 0x8000800, the ones the UPF chooses from there up.
const upfTEIDRange = "0x1000-0xfffffff"

// chooseTEIDs gives flows TEIDs as the UPF would choose them (F-TEID
// CHOOSE): one slot each of the chosen range, the slots in random order
// (UEs send in no order of their establishment).
func chooseTEIDs(flows []kern.GenFlow) {
	base, _ := (&model.Config{TEIDRange: upfTEIDRange}).ChosenTEIDs()
	rng := rand.New(rand.NewPCG(14, 8023))
	for i, sl := range rng.Perm(len(flows)) {
		flows[i].TEID = base + uint32(sl)
	}
}

// upfPool is the UE pool of the pooled scenarios: it holds 10.45.0.1 and
// room for upfScale random addresses.
const upfPool = "10.44.0.0/15"

// upfFlows returns n sessions' uplink TEIDs and UE addresses: for one, TEID
// 0x1000 and 10.45.0.1; for more, random and distinct ones (fixed seed) in
// 10.0.0.0/8.
func upfFlows(n int) []kern.GenFlow { return upfFlowsIn(n, 10<<24, 24) }

// upfFlowsIn is upfFlows with the random UE addresses in base/(32-bits).
func upfFlowsIn(n int, base uint32, bits uint) []kern.GenFlow {
	if n == 1 {
		return []kern.GenFlow{{TEID: 0x1000, Addr: [4]byte{10, 45, 0, 1}}}
	}
	rng := rand.New(rand.NewPCG(14, 29244))
	teids := map[uint32]bool{}
	ues := map[uint32]bool{}
	out := make([]kern.GenFlow, 0, n)
	for len(out) < n {
		t := 0x1000 + rng.Uint32N(0x7ff_0000) // below the chosen half of upfTEIDRange
		u := base | rng.Uint32N(1<<bits)
		if teids[t] || ues[u] || u&0xff == 0 || u&0xff == 0xff {
			continue
		}
		teids[t], ues[u] = true, true
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], u)
		out = append(out, kern.GenFlow{TEID: t, Addr: a})
	}
	return out
}

// upfTraffic sets the generator up for the direction: GTP-U frames from
// the gNB to the upf's N3 address, the TEIDs and inner sources of flows
// (uplink); plain frames to the UE addresses of flows (downlink).
func upfTraffic(e *scenario.Env, t *scenario.Topology, dl bool, flows []kern.GenFlow) error {
	t.Frame.DstIP = net.IP(flows[0].Addr[:])
	if dl {
		return e.Objs.SetMode(kern.ModeDL, flows)
	}
	t.Frame.SrcIP = net.IP(flows[0].Addr[:])
	t.Frame.DstIP = scenario.DstIP
	t.Frame.GTP = &kern.GTPOuter{SrcIP: upfGNBUL, DstIP: net.IPv4(198, 18, 0, 1).To4(), TEID: flows[0].TEID}
	return e.Objs.SetMode(kern.ModeGTPUL, flows)
}

// upfSession is session i of the bench: an uplink PDR on the flow's TEID
// and a downlink PDR on its UE address, their FARs, and a URR counting
// the volume of both.
func upfSession(i int, f kern.GenFlow) *model.Session {
	return &model.Session{
		SEID: uint64(i + 1),
		PDRs: []model.PDR{
			{ID: 1, Precedence: 100, Source: "access", FTEID: &model.FTEID{TEID: f.TEID}, OuterHeaderRemoval: "gtp-u", FAR: 1, URRs: []uint32{1}},
			{ID: 2, Precedence: 100, Source: "core", UEIPv4: net.IP(f.Addr[:]).String(), FAR: 2, URRs: []uint32{1}},
		},
		FARs: []model.FAR{
			{ID: 1, Action: []string{"forw"}, Destination: "core"},
			{ID: 2, Action: []string{"forw"}, Destination: "access",
				OuterHeader: &model.OuterHeader{TEID: 0x80000000 | uint32(i), Address: upfPeer.String()}},
		},
		URRs: []model.URR{{ID: 1, Measure: []string{"volume"}}},
	}
}

// upfKeys is how the bench's sessions are found: by hash (TEIDs the SMF
// gave, UE addresses outside any pool), by the slot of a TEID the UPF
// chose, or by the slot of a UE address in the cube's UE pool.
type upfKeys int

const (
	hashKeys upfKeys = iota
	chosenTEIDs
	pooledUEs
)

// setupUPF runs a upf cube with sessions found by keys.
func setupUPF(e *scenario.Env, hook datapath.Hook, dl bool, sessions int, keys upfKeys) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, hook)
	if err != nil {
		return nil, err
	}
	// Uplink: n3 faces the generator, n6 the sink (its gateway is b1).
	// Downlink: n6 faces the generator, n3 the sink (the gNB is b1).
	in, out := "n3", "n6"
	if dl {
		in, out = "n6", "n3"
	}
	outCfg := json.RawMessage(`{}`)
	if !dl {
		outCfg = json.RawMessage(fmt.Sprintf(`{"gateway":%q}`, upfPeer))
	}
	name := "upf" + e.ID()
	cfg := `{"teid_range":"` + upfTEIDRange + `"}`
	flows := upfFlows(sessions)
	switch keys {
	case chosenTEIDs:
		chooseTEIDs(flows)
	case pooledUEs:
		cfg = fmt.Sprintf(`{"teid_range":%q,"ue_pools":[{"prefix":%q}]}`, upfTEIDRange, upfPool)
		if sessions > 1 {
			flows = upfFlowsIn(sessions, 10<<24|44<<16, 17)
		}
	}
	c := &cube.Cube{Name: name, Type: "upf", Hook: hook,
		Config: json.RawMessage(cfg),
		Ports: []cube.Port{
			{Name: in, Index: 0, Peer: p.A1, Addresses: []string{upfA1Net}},
			{Name: out, Index: 1, Peer: p.B0, Addresses: []string{upfB0Net}, Config: outCfg},
		}}
	if err := eng.Update(func(tp *cube.Topology) error { return tp.AddCube(c) }); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := putSessions(eng, name, upfEstablished(flows)); err != nil {
		return nil, err
	}
	setup := time.Since(t0)
	if err := learnPeer(eng, c, out, p.B1MAC); err != nil {
		return nil, err
	}
	if err := freeSink(p); err != nil {
		return nil, err
	}
	t := p.Topology(router.PortMAC(c, &c.Ports[0]))
	if err := upfTraffic(e, t, dl, flows); err != nil {
		return nil, err
	}
	t.Info["hook"] = string(hook)
	t.Info["sessions"] = fmt.Sprint(sessions)
	if keys == pooledUEs {
		t.Info["UE pool"] = upfPool
	}
	if sessions > 1 {
		t.Info["sessions set up (engine, 1,000 a change)"] = fmt.Sprintf("%v, %.0f/s", setup.Round(time.Millisecond), float64(sessions)/setup.Seconds())
		state := 0
		for _, raw := range eng.Entries(tenant.Admin, name, upf.TableSessions) {
			state += len(raw)
		}
		t.Info["state per session"] = fmt.Sprintf("%d B", state/sessions)
	}
	stubCost(e, t, root, p.A1, hook)
	return t, nil
}

// upfEstablished is the order in which the sessions of flows are set up: a
// random permutation (fixed seed) independent of the order the generator
// visits flows in and of their slots. UEs send in no order of their
// establishment; sessions set up in visit order would have the packets read
// the kernel's entries, rules and counter blocks sequentially (the
// prefetcher and the TLB would flatter the scale scenarios).
func upfEstablished(flows []kern.GenFlow) []kern.GenFlow {
	out := make([]kern.GenFlow, len(flows))
	for i, j := range rand.New(rand.NewPCG(14, 100000)).Perm(len(flows)) {
		out[i] = flows[j]
	}
	return out
}

// putSessions writes the sessions of flows, a thousand a change (as the
// PFCP agent batches establishments).
func putSessions(eng *engine.Engine, name string, flows []kern.GenFlow) error {
	for lo := 0; lo < len(flows); lo += 1000 {
		hi := min(lo+1000, len(flows))
		err := eng.ChangeEntries(tenant.Admin, name, upf.TableSessions, func(tx *engine.EntryTx) error {
			for i := lo; i < hi; i++ {
				if _, err := tx.PutValue(upfSession(i, flows[i])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sessions %d-%d: %w", lo, hi-1, err)
		}
	}
	return nil
}

// learnPeer has the upf learn that the next hop behind its port is at mac:
// an ARP reply from upfPeer injected into the port, then waits until the
// cube knows it.
func learnPeer(eng *engine.Engine, c *cube.Cube, port string, mac net.HardwareAddr) error {
	p := c.Port(port)
	own := router.PortMAC(c, p)
	f := make([]byte, 42)
	copy(f[0:], own)
	copy(f[6:], mac)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	copy(f[14:], []byte{0, 1, 8, 0, 6, 4, 0, 2})
	copy(f[22:], mac)
	copy(f[28:], upfPeer)
	copy(f[32:], own)
	copy(f[38:], net.IPv4(198, 18, 1, 1).To4())
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := eng.Inject(tenant.Admin, c.Name, port, f, false); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		v, err := eng.View(tenant.Admin, c.Name, "neighbours")
		if err != nil {
			return err
		}
		if ns, ok := v.([]upf.NeighbourInfo); ok {
			for _, n := range ns {
				if n.Port == port && n.Address == upfPeer.String() {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("the upf did not learn its next hop %s on %s", upfPeer, port)
}

// setupP4UPF runs examples/p4/upf.p4 at XDP with one entry for the
// direction: port 0 (access) faces the generator on the uplink, port 1
// (core) on the downlink.
func setupP4UPF(e *scenario.Env, dl bool) (*scenario.Topology, error) {
	p, eng, root, err := enginePath(e, datapath.XDP)
	if err != nil {
		return nil, err
	}
	flows := upfFlows(1)
	name := "p4" + e.ID()
	cfg, err := exampleP4("upf.p4")
	if err != nil {
		return nil, err
	}
	access, core := p.A1, p.B0
	entry := fmt.Sprintf(`{"table":"uplink","match":{"teid":"%d"},"action":"decap"}`, flows[0].TEID)
	if dl {
		access, core = p.B0, p.A1
		entry = fmt.Sprintf(`{"table":"downlink","match":{"ue_addr":%q},"action":"encap","params":{"teid":"%d","gnb":%q,"upf":"198.18.1.1"}}`,
			net.IP(flows[0].Addr[:]).String(), 0x80000000, upfPeer.String())
	}
	// The program keeps the frames' MAC addresses: they go to b1's.
	t, err := build(eng, p, p.B1MAC, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: name, Type: "p4", Hook: datapath.XDP, Config: cfg, Ports: []cube.Port{
			{Name: "access", Index: 0, Peer: access}, {Name: "core", Index: 1, Peer: core}}}); err != nil {
			return err
		}
		_, err := tp.PutEntry(name, "entries", json.RawMessage(entry))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := upfTraffic(e, t, dl, flows); err != nil {
		return nil, err
	}
	t.Info["program"] = "upf.p4"
	stubCost(e, t, root, p.A1, datapath.XDP)
	return t, nil
}
