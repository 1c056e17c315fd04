package lb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/counters"
)

// Kernel layouts (mirrors of bpf/lb.bpf.c).

const (
	beActive   = 1
	beDraining = 2

	modeDSR    = 0
	modeNAT    = 1
	modeTunnel = 2

	cfgPassUnknown = 1

	noBackend = 0xffffffff
	innerMap  = 0x1000 // BPF_F_INNER_MAP
)

type portVal struct {
	MAC [6]byte
	_   uint16
	IP  [4]byte
	IP6 [16]byte
}

// addr16 is an address as the fast path stores it: 16 bytes, IPv4 in the
// first four, and its family.
func addr16(a netip.Addr) ([16]byte, uint8) {
	var b [16]byte
	if a.Is4() {
		v := a.As4()
		copy(b[:], v[:])
		return b, 4
	}
	return a.As16(), 6
}

// addrOf is addr16's inverse.
func addrOf(b [16]byte, family uint8) netip.Addr {
	if family == 4 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16(b)
}

type svcKey struct {
	VIP    [16]byte
	Port   uint16 // network order
	Proto  uint8
	Family uint8
}

func (k svcKey) key() string {
	proto := "tcp"
	if k.Proto == 17 {
		proto = "udp"
	}
	return fmt.Sprintf("%s:%s:%d", addrOf(k.VIP, k.Family), proto, htons(k.Port))
}

type vipKey struct {
	Addr   [16]byte
	Family uint32
}

// cfgVal mirrors struct lb_cfg.
type cfgVal struct{ Flags uint32 }

// natVal mirrors struct lb_nat: what the reply path of a NAT-mode
// connection restores.
type natVal struct {
	VIP    [16]byte
	VPort  uint16 // network order
	InPort uint16
	CMAC   [6]byte
	_      uint16
}

type svcVal struct {
	ID   uint32
	Size uint32
	Mode uint32
	_    uint32
}

type beVal struct {
	IP    [16]byte
	TPort uint16 // network order
	Port  uint16
	MAC   [6]byte
	Flags uint16
	Svc   uint32
}

type connKey struct {
	Saddr  [16]byte
	Daddr  [16]byte
	Sport  uint16
	Dport  uint16
	Proto  uint8
	Family uint8
	_      [2]uint8
}

type connVal struct {
	Backend uint32
	BeIP    [16]byte
}

type beStats struct {
	Packets uint64
	Bytes   uint64
	Flows   uint64
}

// The cube's event counters, in the order of enum lb_stat.
var lbCounters = counters.Named{Map: "lb_stats", Names: []string{"forwarded", "replies", "arp_replies", "no_backend", "unknown", "not_encapsulated"}}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

var protoNum = map[string]uint8{"tcp": 6, "udp": 17}

type beRef struct {
	svc  string
	name string
}

type svcState struct {
	id          uint32
	fingerprint string
	// entries per backend name in the current Maglev table
	share map[string]int
	size  uint32
}

type controller struct {
	mu       sync.Mutex
	svcIDs   map[string]uint32 // service key → id
	beIDs    map[beRef]uint32
	services map[string]*svcState
	nextBE   uint32
}

func newController() cube.Controller {
	return &controller{svcIDs: map[string]uint32{}, beIDs: map[beRef]uint32{}, services: map[string]*svcState{}}
}

// resolved is a service with all its backends, validated.
type resolved struct {
	svc      *Service
	backends []Backend
}

func resolve(c *cube.Cube) ([]resolved, error) {
	rows, err := servicesTable.Entries(c)
	if err != nil {
		return nil, err
	}
	extra, err := backendsTable.Entries(c)
	if err != nil {
		return nil, err
	}
	bySvc := map[string][]Backend{}
	for _, v := range extra {
		b := &v.(*TableBackend).Backend
		bySvc[b.Service] = append(bySvc[b.Service], *b)
	}
	out := make([]resolved, 0, len(rows))
	for _, v := range rows {
		s := v.(*Service)
		all := append(append([]Backend{}, s.Backends...), bySvc[s.Key()]...)
		sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
		out = append(out, resolved{s, all})
	}
	return out, nil
}

func decodeConfig(c *cube.Cube) (*Config, error) {
	v, err := cube.Decode("config", c.Config, &Config{})
	if err != nil {
		return nil, err
	}
	cfg := v.(*Config)
	if err := cfg.Validate(c); err != nil {
		return nil, cube.Within("config", err)
	}
	return cfg, nil
}

// recover re-learns ids from the maps after a daemon restart, so flows in
// the connection table keep their backends.
func (ctl *controller) recover(h cube.Handle) {
	if len(ctl.svcIDs) > 0 {
		return
	}
	ms, err := h.Map("lb_services")
	if err != nil {
		return
	}
	var k svcKey
	var v svcVal
	it := ms.Iterate()
	for it.Next(&k, &v) {
		ctl.svcIDs[k.key()] = v.ID
	}
}

func (ctl *controller) allocSvc(key string) (uint32, error) {
	if id, ok := ctl.svcIDs[key]; ok {
		return id, nil
	}
	used := map[uint32]bool{}
	for _, id := range ctl.svcIDs {
		used[id] = true
	}
	for id := uint32(0); id < MaxServices; id++ {
		if !used[id] {
			ctl.svcIDs[key] = id
			return id, nil
		}
	}
	return 0, cube.Errorf("tables.services", "more than %d services", MaxServices)
}

// allocBE hands out backend ids round-robin so that a freed id is not
// reused soon (flows pinned to it check the address anyway).
func (ctl *controller) allocBE(r beRef, used map[uint32]bool) (uint32, error) {
	if id, ok := ctl.beIDs[r]; ok {
		return id, nil
	}
	for i := uint32(0); i < MaxBackends; i++ {
		id := (ctl.nextBE + i) % MaxBackends
		if !used[id] {
			ctl.beIDs[r] = id
			used[id] = true
			ctl.nextBE = id + 1
			return id, nil
		}
	}
	return 0, cube.Errorf("tables.backends", "more than %d backends in all", MaxBackends)
}

// Sync writes ports, services, backends and Maglev tables. Connection and
// NAT tables (learned by the fast path) are left alone: flows whose backend
// stays active or draining keep it.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfg, err := decodeConfig(c)
	if err != nil {
		return err
	}
	svcs, err := resolve(c)
	if err != nil {
		return err
	}
	ctl.recover(h)
	maps := map[string]*ebpf.Map{}
	for _, n := range []string{"lb_cfg", "lb_ports", "lb_vips", "lb_services", "lb_maglev", "lb_backends"} {
		if maps[n], err = h.Map(n); err != nil {
			return err
		}
	}
	// Ports.
	for i := 0; i < datapath.MaxPorts; i++ {
		var v portVal
		if p := c.PortByIndex(i); p != nil {
			copy(v.MAC[:], portMAC(c, p))
			for _, a := range p.Addresses { // the first of each family
				pf, err := netip.ParsePrefix(a)
				switch {
				case err != nil:
				case pf.Addr().Is4() && v.IP == [4]byte{}:
					v.IP = pf.Addr().As4()
				case pf.Addr().Is6() && v.IP6 == [16]byte{}:
					v.IP6 = pf.Addr().As16()
				}
			}
		}
		if err := maps["lb_ports"].Put(uint32(i), v); err != nil {
			return fmt.Errorf("lb_ports: %w", err)
		}
	}
	var cv cfgVal
	if cfg.Unknown == "pass" {
		cv.Flags = cfgPassUnknown
	}
	if err := maps["lb_cfg"].Put(uint32(0), cv); err != nil {
		return err
	}

	// Ids: keep existing ones, allocate new ones.
	wantSvc := map[string]bool{}
	wantBE := map[beRef]bool{}
	for _, r := range svcs {
		wantSvc[r.svc.Key()] = true
		for _, b := range r.backends {
			wantBE[beRef{r.svc.Key(), b.Name}] = true
		}
	}
	for k := range ctl.svcIDs {
		if !wantSvc[k] {
			delete(ctl.svcIDs, k)
		}
	}
	var freed []uint32
	for r, id := range ctl.beIDs {
		if !wantBE[r] {
			freed = append(freed, id)
			delete(ctl.beIDs, r)
		}
	}
	usedBE := map[uint32]bool{}
	for _, id := range ctl.beIDs {
		usedBE[id] = true
	}
	for _, id := range freed {
		usedBE[id] = true // not reused within this sync
	}

	vips := map[vipKey]uint32{}
	for _, r := range svcs {
		s := r.svc
		key := s.Key()
		sid, err := ctl.allocSvc(key)
		if err != nil {
			return err
		}
		// Backends first, so the table never points at an unwritten one.
		var names []string
		var weights []uint32
		var ids []uint32
		fp := fmt.Sprintf("%d|", s.TableSize)
		for _, b := range r.backends {
			id, err := ctl.allocBE(beRef{key, b.Name}, usedBE)
			if err != nil {
				return err
			}
			ip, _ := addr16(netip.MustParseAddr(b.Address))
			v := beVal{IP: ip, Port: uint16(c.Port(b.Port).Index), Flags: beStates[b.State], Svc: sid}
			if s.Mode == "nat" {
				v.TPort = htons(b.TargetPort)
			}
			hw, _ := net.ParseMAC(b.MAC)
			copy(v.MAC[:], hw)
			if err := maps["lb_backends"].Put(id, v); err != nil {
				return fmt.Errorf("lb_backends: %w", err)
			}
			if b.State == "active" {
				names = append(names, b.Name)
				weights = append(weights, *b.Weight)
				ids = append(ids, id)
				fp += fmt.Sprintf("%s=%d/%d,", b.Name, id, *b.Weight)
			}
		}
		st := ctl.services[key]
		if st == nil || st.fingerprint != fp || st.id != sid {
			table := Maglev(names, weights, s.TableSize)
			vals := make([]uint32, len(table))
			share := map[string]int{}
			for i, b := range table {
				if b < 0 {
					vals[i] = noBackend
					continue
				}
				vals[i] = ids[b]
				share[names[b]]++
			}
			if err := writeTable(maps["lb_maglev"], sid, vals); err != nil {
				return err
			}
			ctl.services[key] = &svcState{id: sid, fingerprint: fp, share: share, size: s.TableSize}
		}
		a, proto, port, _ := ParseServiceKey(key)
		vip, fam := addr16(a)
		sk := svcKey{VIP: vip, Port: htons(port), Proto: protoNum[proto], Family: fam}
		mode := uint32(modeDSR)
		switch s.Mode {
		case "nat":
			mode = modeNAT
		case "tunnel":
			mode = modeTunnel
		}
		if err := maps["lb_services"].Put(sk, svcVal{ID: sid, Size: s.TableSize, Mode: mode}); err != nil {
			return fmt.Errorf("lb_services: %w", err)
		}
		vips[vipKey{vip, uint32(fam)}]++
	}
	// Remove what went away: services, then their tables and backends.
	var k svcKey
	var v svcVal
	var staleSvc []svcKey
	it := maps["lb_services"].Iterate()
	for it.Next(&k, &v) {
		if !wantSvc[k.key()] {
			staleSvc = append(staleSvc, k)
		}
	}
	for _, k := range staleSvc {
		maps["lb_services"].Delete(k)
	}
	for key, st := range ctl.services {
		if !wantSvc[key] {
			maps["lb_maglev"].Delete(st.id)
			delete(ctl.services, key)
		}
	}
	for _, id := range freed {
		if err := maps["lb_backends"].Put(id, beVal{}); err != nil {
			return err
		}
	}
	var vk vipKey
	var vv uint32
	var staleVIP []vipKey
	it = maps["lb_vips"].Iterate()
	for it.Next(&vk, &vv) {
		if vips[vk] == 0 {
			staleVIP = append(staleVIP, vk)
		}
	}
	for _, vk := range staleVIP {
		maps["lb_vips"].Delete(vk)
	}
	for vk, n := range vips {
		if err := maps["lb_vips"].Put(vk, n); err != nil {
			return err
		}
	}
	return nil
}

// writeTable fills a new inner array and swaps it in: one map update, so a
// packet sees either the whole old table or the whole new one.
func writeTable(outer *ebpf.Map, sid uint32, vals []uint32) error {
	inner, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4,
		MaxEntries: uint32(len(vals)), Flags: innerMap})
	if err != nil {
		return fmt.Errorf("maglev table: %w", err)
	}
	defer inner.Close()
	keys := make([]uint32, len(vals))
	for i := range keys {
		keys[i] = uint32(i)
	}
	if _, err := inner.BatchUpdate(keys, vals, nil); err != nil {
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("maglev table: %w", err)
		}
		for i, v := range vals {
			if err := inner.Put(uint32(i), v); err != nil {
				return fmt.Errorf("maglev table: %w", err)
			}
		}
	}
	if err := outer.Put(sid, inner); err != nil {
		return fmt.Errorf("lb_maglev[%d]: %w", sid, err)
	}
	return nil
}
