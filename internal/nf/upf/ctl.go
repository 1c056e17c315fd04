package upf

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// kmaps are the cube's maps, looked up at every Sync (the controller's
// goroutines use them between calls of the engine).
type kmaps struct {
	cfg, ports, teid, teidSlots, ue4, ue6, rules, ruleCount, sdfs, fars, qers, urrs, neigh, stats *ebpf.Map
	urrRep, neighGen, pools, ueSlots, ueLists, teidMore, ueMore                                   *ebpf.Map
}

func (ctl *controller) loadMaps(h cube.Handle) error {
	m := &ctl.maps
	for _, x := range []struct {
		name string
		dst  **ebpf.Map
	}{
		{"upf_cfg", &m.cfg}, {"upf_ports", &m.ports}, {"upf_teid", &m.teid}, {"upf_teid_slots", &m.teidSlots}, {"upf_ue4", &m.ue4}, {"upf_ue6", &m.ue6},
		{"upf_rules", &m.rules}, {mapRuleCount, &m.ruleCount}, {"upf_sdfs", &m.sdfs}, {"upf_fars", &m.fars},
		{"upf_qers", &m.qers}, {"upf_urrs", &m.urrs}, {"upf_neigh", &m.neigh},
		{"upf_stats", &m.stats}, {"upf_urr_rep", &m.urrRep}, {"upf_neigh_gen", &m.neighGen},
		{"upf_pools", &m.pools}, {"upf_ue_slots", &m.ueSlots}, {"upf_ue_lists", &m.ueLists},
		{"upf_teid_more", &m.teidMore}, {"upf_ue_more", &m.ueMore},
	} {
		mp, err := h.Map(x.name)
		if err != nil {
			return err
		}
		*x.dst = mp
	}
	return nil
}

type slot[T any] struct {
	idx uint32
	v   T
}

// sessState is what the kernel holds of one session, and where.
type sessState struct {
	sess  *model.Session
	rules map[ruleKey]slot[kRule]
	sdfs  map[ruleKey]slot[kSDF]
	fars  map[uint32]slot[kFAR]
	qers  map[uint32]slot[kQER]
	urrs  map[uint32]slot[urrConf]
	lists map[listKey][]uint32
	// pooled: the lists in a pool's slot, by their index in upf_ue_lists
	// (the others are in a hash map).
	pooled map[listKey]uint32
	// dirty: a write failed half-way; the next change rewrites everything.
	dirty bool
}

func newSessState() *sessState {
	return &sessState{rules: map[ruleKey]slot[kRule]{}, sdfs: map[ruleKey]slot[kSDF]{}, fars: map[uint32]slot[kFAR]{},
		qers: map[uint32]slot[kQER]{}, urrs: map[uint32]slot[urrConf]{}, lists: map[listKey][]uint32{},
		pooled: map[listKey]uint32{}}
}

// ref names a rule or URR of a session (for the slow path's events).
type ref struct {
	seid uint64
	id   uint32
}

type tunnelKey struct {
	peer netip.Addr
	teid uint32
}

type cpKey struct {
	addr string
	seid uint64
}

type controller struct {
	mu    sync.Mutex
	maps  kmaps
	name  string
	cfg   *model.Config
	ports map[string]portInfo // by name

	sessions map[uint64]*sessState
	keyOwner map[listKey]uint64
	// slotTEID: the TEID (host order) that holds each upf_teid_slots slot
	// in use.
	slotTEID map[uint32]uint32
	ruleOf   map[uint32]ref // rule index → (SEID, ruleKey.id())
	urrOf    map[uint32]ref // URR index → (SEID, URR ID)
	// tunnels finds the session of a peer's tunnel (an error indication
	// names it); a gNB may give a new session a TEID an older one still
	// has: the newest wins.
	tunnels map[tunnelKey]uint64
	byCP    map[cpKey]uint64
	retired map[ref]kCount // counters of rules replaced, per (SEID, PDR ID)
	drain   drainState

	rules, sdfs, fars, qers, urrs *indexes
	// pools is the UE pool table the kernel has (pools.go); ueLists hands
	// out the indexes of upf_ue_lists.
	pools   kPools
	ueLists *indexes
	// adopted: the kernel's entries of an earlier daemon were read back.
	adopted bool
	// recovered holds those entries until the first Sync assigns them;
	// orphanLists are lists whose rules no session owns.
	recovered   map[uint64]*sessState
	orphanLists []listKey

	usage   *usage
	buffers *buffers
	neigh   *neighbours
	slow    slowStats

	service
}

func newController() cube.Controller {
	ctl := &controller{
		sessions: map[uint64]*sessState{}, keyOwner: map[listKey]uint64{}, slotTEID: map[uint32]uint32{}, ruleOf: map[uint32]ref{},
		urrOf: map[uint32]ref{}, tunnels: map[tunnelKey]uint64{}, byCP: map[cpKey]uint64{}, retired: map[ref]kCount{},
	}
	ctl.drain = newDrainState()
	ctl.usage = newUsage()
	ctl.buffers = newBuffers()
	ctl.neigh = newNeighbours()
	return ctl
}

// sizeIndexes makes the allocators of the maps' indexes, up to the maps'
// sizes (the cube's max_sessions made them), once.
func (ctl *controller) sizeIndexes() {
	if ctl.rules != nil {
		return
	}
	m := &ctl.maps
	ctl.rules, ctl.sdfs, ctl.fars = newIndexes(m.rules.MaxEntries()), newIndexes(m.sdfs.MaxEntries()), newIndexes(m.fars.MaxEntries())
	ctl.qers, ctl.urrs, ctl.ueLists = newIndexes(m.qers.MaxEntries()), newIndexes(m.urrs.MaxEntries()), newIndexes(m.ueLists.MaxEntries())
}

// portInfo is what the controller knows of a port.
type portInfo struct {
	index int
	role  uint8
	mac   [6]byte
	v4    netip.Prefix
	v6    netip.Prefix
	gw4   netip.Addr
	gw6   netip.Addr
}

var roles = map[string]uint8{model.PortN3: roleN3, model.PortN6: roleN6, model.PortN9: roleN9}

// Sync writes the settings and ports, adopts what an earlier daemon left in
// the kernel, and brings every session's kernel state in line with the
// sessions table (writing only what differs).
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.handle = h
	defer func() { ctl.handle = nil }()
	cfg, err := model.DecodeConfig(c)
	if err != nil {
		return err
	}
	if err := ctl.loadMaps(h); err != nil {
		return err
	}
	if n := ctl.maps.teidSlots.MaxEntries(); n != cfg.Sessions() {
		return cube.Conflict("config.max_sessions", "%d: the cube's maps were made for %d sessions when it was created; "+
			"to resize it, delete it and create it again", cfg.Sessions(), n)
	}
	ctl.sizeIndexes()
	if ctl.cfg != nil && len(ctl.sessions) > 0 {
		ob, on := ctl.cfg.ChosenTEIDs()
		if nb, nn := cfg.ChosenTEIDs(); ob != nb || on != nn {
			return cube.Conflict("config.teid_range", "%s moves the half the upf chooses TEIDs from (now %#x-%#x), "+
				"whose sessions' uplink is in another map: change it with no sessions", cfg.TEIDRange, ob, ob+on-1)
		}
	}
	if !ctl.adopted {
		// adoption finds chosen TEIDs' slots by the range being synced
		// (the one the kernel state was written with)
		prev := ctl.cfg
		ctl.cfg = cfg
		err := ctl.adopt()
		ctl.cfg = prev
		if err != nil {
			return fmt.Errorf("adopt kernel state: %w", err)
		}
		ctl.adopted = true
	}
	// first: pools that would strand a session's list refuse the change
	// before anything is written.
	if err := ctl.setPools(cfg.UEPools); err != nil {
		return err
	}
	ctl.name, ctl.cfg = c.Name, cfg
	if err := ctl.syncPorts(c); err != nil {
		return err
	}
	gap := uint64(0)
	if cfg.ErrorIndicationRate > 0 {
		gap = 1e9 / uint64(cfg.ErrorIndicationRate) / 2
	}
	base, n := cfg.ChosenTEIDs()
	if err := ctl.maps.cfg.Put(uint32(0), kCfg{NoTEIDGapNs: gap, ChosenBase: base, ChosenN: n}); err != nil {
		return fmt.Errorf("upf_cfg: %w", err)
	}
	rows, err := sessionsTable.Entries(c)
	if err != nil {
		return err
	}
	want := map[uint64]bool{}
	for _, v := range rows {
		s := v.(*model.Session)
		want[s.SEID] = true
		if err := ctl.apply(c, s); err != nil {
			return cube.Within("tables.sessions["+s.Key()+"]", err)
		}
	}
	for seid := range ctl.sessions {
		if !want[seid] {
			if err := ctl.remove(seid); err != nil {
				return err
			}
		}
	}
	if err := ctl.dropUnadopted(); err != nil {
		return err
	}
	ctl.neigh.sync(ctl)
	return ctl.syncService(c, cfg)
}

func (ctl *controller) syncPorts(c *cube.Cube) error {
	ctl.ports = map[string]portInfo{}
	for i := range c.Ports {
		p := &c.Ports[i]
		pc, err := model.DecodePortConfig(p)
		if err != nil {
			return cube.Within("ports["+p.Name+"]", err)
		}
		pi := portInfo{index: p.Index, role: roles[p.Name]}
		copy(pi.mac[:], router.PortMAC(c, p))
		pi.v4, pi.v6 = model.PortAddrs(p)
		if pc.Gateway != "" {
			pi.gw4 = netip.MustParseAddr(pc.Gateway)
		}
		if pc.Gateway6 != "" {
			pi.gw6 = netip.MustParseAddr(pc.Gateway6)
		}
		ctl.ports[p.Name] = pi
	}
	for idx := 0; idx < 64; idx++ {
		var k kPort
		if p := c.PortByIndex(idx); p != nil {
			pi := ctl.ports[p.Name]
			k.MAC, k.Role = pi.mac, pi.role
			if pi.v4.IsValid() {
				k.Has4, k.IP4 = 1, pi.v4.Addr().As4()
			}
			if pi.v6.IsValid() {
				k.Has6, k.IP6 = 1, pi.v6.Addr().As16()
			}
			if pi.gw4.IsValid() {
				k.GW4 = pi.gw4.As4()
			}
			if pi.gw6.IsValid() {
				k.GW6 = pi.gw6.As16()
			}
		}
		if err := ctl.maps.ports.Put(uint32(idx), k); err != nil {
			return fmt.Errorf("upf_ports: %w", err)
		}
	}
	return nil
}

// portByIndex finds a port's name.
func (ctl *controller) portByIndex(idx int) (string, portInfo, bool) {
	for n, p := range ctl.ports {
		if p.index == idx {
			return n, p, true
		}
	}
	return "", portInfo{}, false
}

// PutEntry installs one session (or association) without a full Sync.
func (ctl *controller) PutEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	if table != TableSessions {
		return nil // associations are the agent's bookkeeping
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.handle = h
	defer func() { ctl.handle = nil }()
	s := item.(*model.Session)
	return cube.Within("tables.sessions["+s.Key()+"]", ctl.apply(c, s))
}

// DeleteEntry removes one session.
func (ctl *controller) DeleteEntry(h cube.Handle, c *cube.Cube, table string, item any) error {
	if table != TableSessions {
		return nil
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.handle = h
	defer func() { ctl.handle = nil }()
	return ctl.remove(item.(*model.Session).SEID)
}
