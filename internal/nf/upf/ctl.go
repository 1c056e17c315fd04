package upf

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/bpfmap"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/router"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// kmaps are the cube's maps, looked up at every Sync (the controller's
// goroutines use them between calls of the engine).
type kmaps struct {
	cfg, ports, teid, ue4, ue6, rules, ruleStats, sdfs, fars, qers, urrs, urrStats, neigh, stats *ebpf.Map
	urrRep                                                                                       *ebpf.Map
}

func (ctl *controller) loadMaps(h cube.Handle) error {
	m := &ctl.maps
	for _, x := range []struct {
		name string
		dst  **ebpf.Map
	}{
		{"upf_cfg", &m.cfg}, {"upf_ports", &m.ports}, {"upf_teid", &m.teid}, {"upf_ue4", &m.ue4}, {"upf_ue6", &m.ue6},
		{"upf_rules", &m.rules}, {"upf_rule_stats", &m.ruleStats}, {"upf_sdfs", &m.sdfs}, {"upf_fars", &m.fars},
		{"upf_qers", &m.qers}, {"upf_urrs", &m.urrs}, {"upf_urr_stats", &m.urrStats}, {"upf_neigh", &m.neigh},
		{"upf_stats", &m.stats}, {"upf_urr_rep", &m.urrRep},
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
	// dirty: a write failed half-way; the next change rewrites everything.
	dirty bool
}

func newSessState() *sessState {
	return &sessState{rules: map[ruleKey]slot[kRule]{}, sdfs: map[ruleKey]slot[kSDF]{}, fars: map[uint32]slot[kFAR]{},
		qers: map[uint32]slot[kQER]{}, urrs: map[uint32]slot[urrConf]{}, lists: map[listKey][]uint32{}}
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
	ruleOf   map[uint32]ref // rule index → (SEID, ruleKey.id())
	urrOf    map[uint32]ref // URR index → (SEID, URR ID)
	// tunnels finds the session of a peer's tunnel (an error indication
	// names it); a gNB may give a new session a TEID an older one still
	// has: the newest wins.
	tunnels map[tunnelKey]uint64
	byCP    map[cpKey]uint64
	retired map[ref]kCount // counters of rules replaced, per (SEID, PDR ID)

	rules, sdfs, fars, qers, urrs *indexes
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
		sessions: map[uint64]*sessState{}, keyOwner: map[listKey]uint64{}, ruleOf: map[uint32]ref{},
		urrOf: map[uint32]ref{}, tunnels: map[tunnelKey]uint64{}, byCP: map[cpKey]uint64{}, retired: map[ref]kCount{},
		rules: newIndexes(maxRules), sdfs: newIndexes(maxSDFs), fars: newIndexes(maxFARs),
		qers: newIndexes(maxQERs), urrs: newIndexes(maxURRs),
	}
	ctl.usage = newUsage()
	ctl.buffers = newBuffers()
	ctl.neigh = newNeighbours()
	return ctl
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
	ctl.name, ctl.cfg = c.Name, cfg
	if err := ctl.syncPorts(c); err != nil {
		return err
	}
	gap := uint64(0)
	if cfg.ErrorIndicationRate > 0 {
		gap = 1e9 / uint64(cfg.ErrorIndicationRate) / 2
	}
	if err := ctl.maps.cfg.Put(uint32(0), kCfg{NoTEIDGapNs: gap}); err != nil {
		return fmt.Errorf("upf_cfg: %w", err)
	}
	if !ctl.adopted {
		if err := ctl.adopt(); err != nil {
			return fmt.Errorf("adopt kernel state: %w", err)
		}
		ctl.adopted = true
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

// apply brings the kernel in line with session s: new and changed values
// get fresh indexes (a packet sees either the old rule set of a list or the
// new one, never a mix), unchanged ones stay where they are (with their
// counters), and the lists switch last.
func (ctl *controller) apply(c *cube.Cube, s *model.Session) error {
	img, err := compileSession(s, c, ctl.cfg)
	if err != nil {
		return err
	}
	old := ctl.sessions[s.SEID]
	if old == nil {
		old = ctl.recovered[s.SEID]
		delete(ctl.recovered, s.SEID)
	}
	if old == nil {
		old = newSessState()
	}
	for _, r := range img.rules {
		for _, k := range r.lists {
			if o, ok := ctl.keyOwner[k]; ok && o != s.SEID {
				return cube.Conflict("pdrs", "%s is already used by session %d", k, o)
			}
		}
	}
	if s.CPAddress != "" {
		if o, ok := ctl.byCP[cpKey{s.CPAddress, s.CPSEID}]; ok && o != s.SEID {
			return cube.Conflict("cp_seid", "the SMF's SEID %#x at %s is already session %d", s.CPSEID, s.CPAddress, o)
		}
	}
	n := newSessState()
	n.sess = s
	var fresh []func() // releases the indexes allocated here if the change fails
	undo := func() {
		for _, f := range slices.Backward(fresh) {
			f()
		}
	}
	alloc := func(a *indexes, what string) (uint32, error) {
		i, ok := a.get()
		if !ok {
			return 0, cube.Errorf("tables.sessions", "no room for another %s in the cube's kernel tables", what)
		}
		fresh = append(fresh, func() { a.put(i) })
		return i, nil
	}
	// QERs and URRs keep their index (token bucket, counters) while their
	// ID lives.
	for id, v := range img.qers {
		if o, ok := old.qers[id]; ok {
			n.qers[id] = slot[kQER]{o.idx, v}
			continue
		}
		i, err := alloc(ctl.qers, "QER")
		if err != nil {
			undo()
			return err
		}
		n.qers[id] = slot[kQER]{i, v}
	}
	for id, v := range img.urrs {
		if o, ok := old.urrs[id]; ok {
			n.urrs[id] = slot[urrConf]{o.idx, v}
			continue
		}
		i, err := alloc(ctl.urrs, "URR")
		if err != nil {
			undo()
			return err
		}
		n.urrs[id] = slot[urrConf]{i, v}
	}
	for id, v := range img.fars {
		if o, ok := old.fars[id]; ok && !old.dirty && sameFAR(o.v, v) {
			n.fars[id] = o
			continue
		}
		i, err := alloc(ctl.fars, "FAR")
		if err != nil {
			undo()
			return err
		}
		n.fars[id] = slot[kFAR]{i, v}
	}
	for _, r := range img.rules {
		k := r.rule
		k.FAR = n.fars[r.far].idx
		for i, q := range r.qers {
			k.QER[i] = n.qers[q].idx
		}
		for i, u := range r.urrs {
			k.URR[i] = n.urrs[u].idx
		}
		if r.sdf != nil {
			if o, ok := old.sdfs[r.key]; ok && !old.dirty && o.v == *r.sdf {
				n.sdfs[r.key] = o
			} else {
				i, err := alloc(ctl.sdfs, "SDF filter")
				if err != nil {
					undo()
					return err
				}
				n.sdfs[r.key] = slot[kSDF]{i, *r.sdf}
			}
			k.SDF = n.sdfs[r.key].idx
		}
		if o, ok := old.rules[r.key]; ok && !old.dirty && o.v == k {
			n.rules[r.key] = o
		} else {
			i, err := alloc(ctl.rules, "rule")
			if err != nil {
				undo()
				return err
			}
			n.rules[r.key] = slot[kRule]{i, k}
		}
		for _, lk := range r.lists {
			n.lists[lk] = append(n.lists[lk], n.rules[r.key].idx)
		}
	}
	for lk, l := range n.lists {
		if len(l) > listMax {
			undo()
			return cube.Errorf("pdrs", "%d rules match %s, at most %d", len(l), lk, listMax)
		}
	}
	if err := ctl.write(s.SEID, old, n); err != nil {
		n.dirty = true
		old.dirty = true
		undo()
		return err
	}
	ctl.retire(s.SEID, old, n)
	ctl.index(s.SEID, old, n)
	ctl.sessions[s.SEID] = n
	// Ask for new tunnel peers before releasing buffered packets to them.
	ctl.neigh.sessionChanged(ctl, n)
	ctl.buffers.sessionChanged(ctl, s.SEID, old, n)
	return nil
}

func sameFAR(a, b kFAR) bool {
	a.Notified, b.Notified = 0, 0
	return a == b
}

// write puts n's new values into the kernel, lists last, and deletes the
// lists old had that n has not.
func (ctl *controller) write(seid uint64, old, n *sessState) error {
	m := &ctl.maps
	for id, q := range n.qers {
		if o, ok := old.qers[id]; ok && !old.dirty && o.v == q.v {
			continue
		}
		if err := m.qers.Put(q.idx, &q.v); err != nil {
			return fmt.Errorf("upf_qers: %w", err)
		}
	}
	for id, u := range n.urrs {
		o, ok := old.urrs[id]
		if ok && !old.dirty && o.v == u.v {
			continue
		}
		if err := ctl.usage.arm(ctl, seid, id, u.idx, u.v, !ok); err != nil {
			return err
		}
	}
	for id, f := range n.fars {
		if o, ok := old.fars[id]; ok && o.idx == f.idx {
			continue
		}
		if err := m.fars.Put(f.idx, &f.v); err != nil {
			return fmt.Errorf("upf_fars: %w", err)
		}
	}
	for k, sd := range n.sdfs {
		if o, ok := old.sdfs[k]; ok && o.idx == sd.idx {
			continue
		}
		if err := m.sdfs.Put(sd.idx, &sd.v); err != nil {
			return fmt.Errorf("upf_sdfs: %w", err)
		}
	}
	for k, r := range n.rules {
		if o, ok := old.rules[k]; ok && o.idx == r.idx {
			continue
		}
		if err := m.rules.Put(r.idx, &r.v); err != nil {
			return fmt.Errorf("upf_rules: %w", err)
		}
	}
	for lk, l := range n.lists {
		if o, ok := old.lists[lk]; ok && !old.dirty && slices.Equal(o, l) {
			continue
		}
		var v kList
		v.N = uint32(len(l))
		copy(v.Rule[:], l)
		if err := ctl.listMap(lk).Put(listMapKey(lk), &v); err != nil {
			return fmt.Errorf("%s: %w", lk, err)
		}
	}
	for lk := range old.lists {
		if _, ok := n.lists[lk]; !ok {
			if err := ctl.listMap(lk).Delete(listMapKey(lk)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("%s: %w", lk, err)
			}
		}
	}
	return nil
}

func (ctl *controller) listMap(k listKey) *ebpf.Map {
	switch k.Kind {
	case keyTEID:
		return ctl.maps.teid
	case keyUE4:
		return ctl.maps.ue4
	}
	return ctl.maps.ue6
}

func listMapKey(k listKey) any {
	if k.Kind == keyUE6 {
		return k.K
	}
	return uint32(k.K)
}

// retire frees what old had that n no longer uses: its entries are zeroed
// (so that no restart adopts them) and the rules' counters are kept.
func (ctl *controller) retire(seid uint64, old, n *sessState) {
	m := &ctl.maps
	for k, r := range old.rules {
		if nr, ok := n.rules[k]; ok && nr.idx == r.idx {
			continue
		}
		if c, err := readCount(m.ruleStats, r.idx); err == nil {
			key := ref{seid, uint32(k.PDR)}
			acc := ctl.retired[key]
			addCount(&acc, c)
			ctl.retired[key] = acc
		}
		zero(m.rules, r.idx, kRule{})
		zeroPerCPU[kCount](m.ruleStats, r.idx)
		delete(ctl.ruleOf, r.idx)
		ctl.rules.put(r.idx)
	}
	for k, sd := range old.sdfs {
		if ns, ok := n.sdfs[k]; ok && ns.idx == sd.idx {
			continue
		}
		zero(m.sdfs, sd.idx, kSDF{})
		ctl.sdfs.put(sd.idx)
	}
	for id, f := range old.fars {
		if nf, ok := n.fars[id]; ok && nf.idx == f.idx {
			continue
		}
		zero(m.fars, f.idx, kFAR{})
		ctl.fars.put(f.idx)
	}
	for id, q := range old.qers {
		if _, ok := n.qers[id]; ok {
			continue
		}
		zero(m.qers, q.idx, kQER{})
		ctl.qers.put(q.idx)
	}
	for id, u := range old.urrs {
		if _, ok := n.urrs[id]; ok {
			continue
		}
		ctl.usage.forget(ctl, u.idx)
		zero(m.urrs, u.idx, kURR{})
		zeroPerCPU[kCount](m.urrStats, u.idx)
		delete(ctl.urrOf, u.idx)
		ctl.urrs.put(u.idx)
	}
}

// index updates the controller's lookups for session n (was old).
func (ctl *controller) index(seid uint64, old, n *sessState) {
	for lk := range old.lists {
		if ctl.keyOwner[lk] == seid {
			delete(ctl.keyOwner, lk)
		}
	}
	for lk := range n.lists {
		ctl.keyOwner[lk] = seid
	}
	for k, r := range n.rules {
		ctl.ruleOf[r.idx] = ref{seid, k.id()}
	}
	for id, u := range n.urrs {
		ctl.urrOf[u.idx] = ref{seid, id}
	}
	if old.sess != nil {
		for _, f := range old.sess.FARs {
			if f.OuterHeader == nil {
				continue
			}
			tk := tunnelKey{netip.MustParseAddr(f.OuterHeader.Address), f.OuterHeader.TEID}
			if ctl.tunnels[tk] == seid {
				delete(ctl.tunnels, tk)
			}
		}
		if old.sess.CPAddress != "" {
			delete(ctl.byCP, cpKey{old.sess.CPAddress, old.sess.CPSEID})
		}
	}
	if n.sess != nil {
		for _, f := range n.sess.FARs {
			if f.OuterHeader != nil {
				ctl.tunnels[tunnelKey{netip.MustParseAddr(f.OuterHeader.Address), f.OuterHeader.TEID}] = seid
			}
		}
		if n.sess.CPAddress != "" {
			ctl.byCP[cpKey{n.sess.CPAddress, n.sess.CPSEID}] = seid
		}
	}
}

// remove takes a session out of the kernel: lists first, then what they
// pointed at.
func (ctl *controller) remove(seid uint64) error {
	old := ctl.sessions[seid]
	if old == nil {
		return nil
	}
	n := newSessState()
	for lk := range old.lists {
		if err := ctl.listMap(lk).Delete(listMapKey(lk)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("%s: %w", lk, err)
		}
	}
	ctl.retire(seid, old, n)
	ctl.index(seid, old, n)
	for k := range ctl.retired {
		if k.seid == seid {
			delete(ctl.retired, k)
		}
	}
	delete(ctl.sessions, seid)
	ctl.buffers.drop(seid)
	return nil
}

func zero[T any](m *ebpf.Map, idx uint32, v T) {
	_ = m.Put(idx, v)
}

func zeroPerCPU[T any](m *ebpf.Map, idx uint32) {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return
	}
	_ = m.Put(idx, make([]T, n))
}

func readCount(m *ebpf.Map, idx uint32) (kCount, error) {
	var per []kCount
	if err := m.Lookup(idx, &per); err != nil {
		return kCount{}, err
	}
	var c kCount
	for _, x := range per {
		addCount(&c, x)
	}
	return c, nil
}

func addCount(a *kCount, b kCount) {
	for i := range 2 {
		a.Bytes[i] += b.Bytes[i]
		a.Pkts[i] += b.Pkts[i]
	}
}

// adopt reads back the entries an earlier daemon left in the kernel, by
// owner, so that the first Sync keeps them (and their counters) where they
// are instead of writing everything anew.
func (ctl *controller) adopt() error {
	ctl.recovered = map[uint64]*sessState{}
	st := func(seid uint64) *sessState {
		s := ctl.recovered[seid]
		if s == nil {
			s = newSessState()
			ctl.recovered[seid] = s
		}
		return s
	}
	m := &ctl.maps
	used := map[uint32]bool{}
	ruleSEID := map[uint32]uint64{}
	if err := bpfmap.Each(m.rules, func(i uint32, v kRule) bool {
		if v.SEID != 0 {
			st(v.SEID).rules[ruleKeyOf(v.ID)] = slot[kRule]{i, v}
			used[i] = true
			ruleSEID[i] = v.SEID
		}
		return true
	}); err != nil {
		return err
	}
	ctl.rules.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.sdfs, func(i uint32, v kSDF) bool {
		if v.SEID != 0 {
			st(v.SEID).sdfs[ruleKeyOf(v.ID)] = slot[kSDF]{i, v}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.sdfs.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.fars, func(i uint32, v kFAR) bool {
		if v.SEID != 0 {
			st(v.SEID).fars[v.ID] = slot[kFAR]{i, v}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.fars.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.qers, func(i uint32, v kQER) bool {
		if v.SEID != 0 {
			v.TAT = [2]uint64{}
			st(v.SEID).qers[v.ID] = slot[kQER]{i, v}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.qers.adopt(used)
	used = map[uint32]bool{}
	if err := bpfmap.Each(m.urrs, func(i uint32, v kURR) bool {
		if v.SEID != 0 {
			st(v.SEID).urrs[v.ID] = slot[urrConf]{i, urrConf{}}
			used[i] = true
		}
		return true
	}); err != nil {
		return err
	}
	ctl.urrs.adopt(used)
	if err := ctl.usage.adopt(ctl); err != nil {
		return err
	}
	// Lists: whose rules they hold tells whose they are.
	for _, lm := range []struct {
		m    *ebpf.Map
		kind uint8
	}{{m.teid, keyTEID}, {m.ue4, keyUE4}, {m.ue6, keyUE6}} {
		var err error
		if lm.kind == keyUE6 {
			err = bpfmap.Each(lm.m, func(k uint64, v kList) bool { ctl.adoptList(listKey{keyUE6, k}, v, ruleSEID); return true })
		} else {
			err = bpfmap.Each(lm.m, func(k uint32, v kList) bool {
				ctl.adoptList(listKey{lm.kind, uint64(k)}, v, ruleSEID)
				return true
			})
		}
		if err != nil {
			return err
		}
	}
	// A recovered QER or FAR compares equal to what the session compiles
	// to only without the fast path's state; URRs are re-armed by usage.
	for _, s := range ctl.recovered {
		for id, u := range s.urrs {
			s.urrs[id] = slot[urrConf]{u.idx, ctl.usage.adoptedConf(u.idx)}
		}
	}
	return nil
}

func (ctl *controller) adoptList(k listKey, v kList, ruleSEID map[uint32]uint64) {
	seid := ruleSEID[v.Rule[0]]
	if v.N == 0 || v.N > listMax || seid == 0 {
		ctl.orphanLists = append(ctl.orphanLists, k)
		return
	}
	ctl.recovered[seid].lists[k] = slices.Clone(v.Rule[:v.N])
}

// dropUnadopted removes what an earlier daemon left for sessions that no
// longer exist (deleted while no daemon ran, or a lost journal record).
func (ctl *controller) dropUnadopted() error {
	for seid, s := range ctl.recovered {
		ctl.sessions[seid] = s
		if err := ctl.remove(seid); err != nil {
			return err
		}
	}
	ctl.recovered = nil
	for _, k := range ctl.orphanLists {
		_ = ctl.listMap(k).Delete(listMapKey(k))
	}
	ctl.orphanLists = nil
	return nil
}
