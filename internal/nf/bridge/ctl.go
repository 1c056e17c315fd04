// Package bridge is the bridge NF: an 802.1Q learning switch with MAC
// learning and aging in the fast path, static FDB entries, access and trunk
// ports, and in-kernel flooding per VLAN.
package bridge

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/vishvananda/netlink"
)

// Kernel layouts (bridge.bpf.c).
type kConfig struct{ AgingNs uint64 }

type kPort struct {
	PVID  uint16
	Valid uint16
}

type kVLAN struct {
	Members  uint64
	Untagged uint64
}

type kFDBKey struct {
	MAC  [6]byte
	VLAN uint16
}

type kFDBVal struct {
	Port  uint32
	Flags uint32
	Seen  uint64
}

const fdbStatic = 1

// devmapVal mirrors struct bpf_devmap_val.
type devmapVal struct {
	Ifindex uint32
	ProgFD  int32
}

// Counter indexes (enum br_counter).
const (
	cntLearnFull = 0
	cntMoves     = 1
	cntFiltered  = 2
	cntFlooded   = 3
	cntVLANDrop  = 4
	cntMax       = 8
)

type controller struct {
	mu       sync.Mutex
	cfg      Config
	vlans    map[uint32]kVLAN // as written
	egress   *ebpf.Program
	lastScan time.Time
}

// Sync writes settings, ports, VLAN membership, the flood set and static
// entries. Learned entries stay, except those of ports that are gone.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	cfgv, err := Type.DecodeConfig(c)
	if err != nil {
		return err
	}
	ctl.cfg = *cfgv.(*Config)
	cfgM, err := h.Map("br_config")
	if err != nil {
		return err
	}
	if err := cfgM.Put(uint32(0), kConfig{AgingNs: uint64(ctl.cfg.aging()) * 1e9}); err != nil {
		return fmt.Errorf("br_config: %w", err)
	}
	portsM, err := h.Map("br_ports")
	if err != nil {
		return err
	}
	vlans := map[uint32]kVLAN{}
	for i := 0; i < datapath.MaxPorts; i++ {
		var kp kPort
		if p := c.PortByIndex(i); p != nil {
			vs, err := portVLANs(p)
			if err != nil {
				return err
			}
			kp = kPort{PVID: uint16(vs.pvid), Valid: 1}
			bit := uint64(1) << i
			for v := 1; v <= 4094; v++ {
				if vs.member(v) {
					x := vlans[uint32(v)]
					x.Members |= bit
					if v == vs.pvid {
						x.Untagged |= bit
					}
					vlans[uint32(v)] = x
				}
			}
		}
		if err := portsM.Put(uint32(i), kp); err != nil {
			return fmt.Errorf("br_ports[%d]: %w", i, err)
		}
	}
	vlansM, err := h.Map("br_vlans")
	if err != nil {
		return err
	}
	first := ctl.vlans == nil
	for v := uint32(1); v < 4095; v++ {
		want := vlans[v]
		if !first && ctl.vlans[v] == want {
			continue
		}
		if err := vlansM.Put(v, want); err != nil {
			return fmt.Errorf("br_vlans[%d]: %w", v, err)
		}
	}
	ctl.vlans = vlans
	if err := ctl.syncFlood(h, c); err != nil {
		return err
	}
	return ctl.syncStatic(h, c)
}

// syncFlood writes interface → port and, for XDP, the flood devmap with its
// egress program. Ports peered with other cubes cannot be reached by a
// devmap broadcast; they only get unicast.
func (ctl *controller) syncFlood(h cube.Handle, c *cube.Cube) error {
	ifportM, err := h.Map("br_ifport")
	if err != nil {
		return err
	}
	want := map[uint32]uint32{} // port → ifindex
	for _, p := range c.Ports {
		ep, err := cube.ParseEndpoint(p.Peer)
		if err != nil || ep.IsCube() {
			continue
		}
		// one request per interface (net.InterfaceByName lists them all:
		// a bridge of many pods would pay it per port, at every change)
		l, err := netlink.LinkByName(ep.Iface)
		if err != nil {
			continue
		}
		want[uint32(p.Index)] = uint32(l.Attrs().Index)
	}
	var k, v uint32
	var stale []uint32
	it := ifportM.Iterate()
	for it.Next(&k, &v) {
		stale = append(stale, k)
	}
	for _, k := range stale {
		ifportM.Delete(k)
	}
	for port, ifx := range want {
		if err := ifportM.Put(ifx, port); err != nil {
			return fmt.Errorf("br_ifport: %w", err)
		}
	}
	floodM, err := h.Map("br_flood")
	if err != nil {
		return nil // TC: no devmap
	}
	if ctl.egress == nil {
		if ctl.egress, err = loadEgress(h); err != nil {
			return fmt.Errorf("bridge flood egress program: %w", err)
		}
	}
	for p := uint32(0); p < datapath.MaxPorts; p++ {
		ifx, ok := want[p]
		if !ok {
			if err := floodM.Delete(p); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("br_flood: %w", err)
			}
			continue
		}
		if err := floodM.Put(p, devmapVal{Ifindex: ifx, ProgFD: int32(ctl.egress.FD())}); err != nil {
			return fmt.Errorf("br_flood[%d] → ifindex %d: %w", p, ifx, err)
		}
	}
	return nil
}

// loadEgress loads br_egress from the XDP object, bound to the cube's own
// maps (the framework loads only the cube's entry program).
func loadEgress(h cube.Handle) (*ebpf.Program, error) {
	obj, err := Type.Object(datapath.XDP)
	if err != nil {
		return nil, err
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		return nil, err
	}
	ps := spec.Programs["br_egress"]
	if ps == nil {
		return nil, errors.New("object lacks br_egress")
	}
	cs := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{"br_egress": ps}, Types: spec.Types}
	repl := map[string]*ebpf.Map{}
	for _, name := range []string{"br_vlans", "br_ifport", datapath.MapStats} {
		m, err := h.Map(name)
		if err != nil {
			return nil, err
		}
		cs.Maps[name] = spec.Maps[name]
		repl[name] = m
	}
	coll, err := ebpf.NewCollectionWithOptions(cs, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, err
	}
	p := coll.Programs["br_egress"]
	delete(coll.Programs, "br_egress")
	coll.Close()
	return p, nil
}

// syncStatic makes the static entries in the FDB match the table and drops
// learned entries of ports that no longer exist.
func (ctl *controller) syncStatic(h cube.Handle, c *cube.Cube) error {
	fdbM, err := h.Map("br_fdb")
	if err != nil {
		return err
	}
	entries, err := staticTable.Entries(c)
	if err != nil {
		return err
	}
	want := map[kFDBKey]kFDBVal{}
	for _, v := range entries {
		k, kv := staticKV(c, v.(*FDBEntry))
		want[k] = kv
	}
	var k kFDBKey
	var v kFDBVal
	var del []kFDBKey
	it := fdbM.Iterate()
	for it.Next(&k, &v) {
		if v.Flags&fdbStatic != 0 {
			if w, ok := want[k]; !ok || w != v {
				del = append(del, k)
			}
		} else if p := c.PortByIndex(int(v.Port)); p == nil {
			del = append(del, k)
		} else if vs, err := portVLANs(p); err != nil || !vs.member(int(k.VLAN)) {
			del = append(del, k)
		}
	}
	for _, k := range del {
		fdbM.Delete(k)
	}
	for k, v := range want {
		if err := fdbM.Put(k, v); err != nil {
			return fmt.Errorf("br_fdb static %s: %w", net.HardwareAddr(k.MAC[:]), err)
		}
	}
	return nil
}

func staticKV(c *cube.Cube, e *FDBEntry) (kFDBKey, kFDBVal) {
	hw, _ := net.ParseMAC(e.MAC)
	var k kFDBKey
	copy(k.MAC[:], hw)
	k.VLAN = uint16(e.VLAN)
	return k, kFDBVal{Port: uint32(c.Port(e.Port).Index), Flags: fdbStatic}
}

// Sweep ages learned entries out of the FDB, off the engine's lock. The
// fast path already ignores expired entries (it floods), so this only frees
// room; it scans at most every aging_time/4 (at least every 10 s, at most
// every second).
func (ctl *controller) Sweep(h cube.Handle, now time.Time) {
	ctl.mu.Lock()
	aging := time.Duration(ctl.cfg.aging()) * time.Second
	every := min(max(aging/4, time.Second), 10*time.Second)
	if now.Sub(ctl.lastScan) < every {
		ctl.mu.Unlock()
		return
	}
	ctl.lastScan = now
	ctl.mu.Unlock()
	if _, err := ctl.age(h, uint64(aging)); err != nil {
		h.Logf("fdb aging: %v", err)
	}
}

// age deletes learned entries idle for longer than aging ns.
func (ctl *controller) age(h cube.Handle, aging uint64) (int, error) {
	fdbM, err := h.Map("br_fdb")
	if err != nil {
		return 0, err
	}
	now := ktime.CoarseNow()
	var k kFDBKey
	var v kFDBVal
	var del []kFDBKey
	it := fdbM.Iterate()
	for it.Next(&k, &v) {
		if v.Flags&fdbStatic == 0 && now > v.Seen && now-v.Seen > aging {
			del = append(del, k)
		}
	}
	for _, k := range del {
		fdbM.Delete(k)
	}
	return len(del), it.Err()
}

// FDBRow is one FDB entry as listed.
type FDBRow struct {
	MAC    string `json:"mac"`
	VLAN   int    `json:"vlan"`
	Port   string `json:"port"`
	Type   string `json:"type"` // static or dynamic
	AgeSec int    `json:"age_sec"`
}

func listFDB(h cube.Handle, c *cube.Cube) (any, error) {
	fdbM, err := h.Map("br_fdb")
	if err != nil {
		return nil, err
	}
	now := ktime.CoarseNow()
	out := []FDBRow{}
	var k kFDBKey
	var v kFDBVal
	it := fdbM.Iterate()
	for it.Next(&k, &v) {
		r := FDBRow{MAC: net.HardwareAddr(k.MAC[:]).String(), VLAN: int(k.VLAN), Port: fmt.Sprint(v.Port), Type: "dynamic"}
		if p := c.PortByIndex(int(v.Port)); p != nil {
			r.Port = p.Name
		}
		if v.Flags&fdbStatic != 0 {
			r.Type = "static"
		} else if now > v.Seen {
			r.AgeSec = int((now - v.Seen) / 1e9)
		}
		out = append(out, r)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].VLAN != out[j].VLAN {
			return out[i].VLAN < out[j].VLAN
		}
		return out[i].MAC < out[j].MAC
	})
	return out, nil
}

// Status summarises the FDB and the bridge's own counters.
type Status struct {
	FDBEntries   int    `json:"fdb_entries"`
	FDBCapacity  int    `json:"fdb_capacity"`
	LearnFull    uint64 `json:"learn_failed_fdb_full"`
	Moves        uint64 `json:"mac_moves"`
	Filtered     uint64 `json:"filtered_same_port"`
	Flooded      uint64 `json:"flooded"`
	VLANDrops    uint64 `json:"vlan_drops"`
	AgingTimeSec int    `json:"aging_time"`
	FloodPorts   int    `json:"xdp_flood_ports,omitempty"`
}

func (ctl *controller) status(h cube.Handle, c *cube.Cube) (any, error) {
	fdbM, err := h.Map("br_fdb")
	if err != nil {
		return nil, err
	}
	cntM, err := h.Map("br_counters")
	if err != nil {
		return nil, err
	}
	st := Status{FDBCapacity: FDBCapacity}
	var k kFDBKey
	var v kFDBVal
	it := fdbM.Iterate()
	for it.Next(&k, &v) {
		st.FDBEntries++
	}
	sum := func(i uint32) uint64 {
		var per []uint64
		if cntM.Lookup(i, &per) != nil {
			return 0
		}
		var s uint64
		for _, x := range per {
			s += x
		}
		return s
	}
	st.LearnFull, st.Moves, st.Filtered, st.Flooded, st.VLANDrops = sum(cntLearnFull), sum(cntMoves), sum(cntFiltered), sum(cntFlooded), sum(cntVLANDrop)
	ctl.mu.Lock()
	st.AgingTimeSec = ctl.cfg.aging()
	ctl.mu.Unlock()
	if m, err := h.Map("br_flood"); err == nil {
		var p uint32
		var dv devmapVal
		it := m.Iterate()
		for it.Next(&p, &dv) {
			st.FloodPorts++
		}
	}
	return st, nil
}

// FlushArgs select the learned entries fdb_flush removes (all by default).
type FlushArgs struct {
	Port string `json:"port,omitempty" format:"name"`
	VLAN int    `json:"vlan,omitempty" minimum:"0" maximum:"4094" doc:"1..4094; 0 or absent: every VLAN"`
	// Static also removes static entries from the kernel until the next
	// sync; off by default (static entries belong to the table).
}

func flushFDB(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*FlushArgs)
	if a == nil {
		a = &FlushArgs{}
	}
	port := -1
	if a.VLAN != 0 {
		if err := checkVID("vlan", a.VLAN); err != nil {
			return nil, err
		}
	}
	if a.Port != "" {
		p := c.Port(a.Port)
		if p == nil {
			return nil, cube.NotFound("port", "cube %s has no port %q", c.Name, a.Port)
		}
		port = p.Index
	}
	fdbM, err := h.Map("br_fdb")
	if err != nil {
		return nil, err
	}
	var k kFDBKey
	var v kFDBVal
	var del []kFDBKey
	it := fdbM.Iterate()
	for it.Next(&k, &v) {
		if v.Flags&fdbStatic != 0 || (port >= 0 && int(v.Port) != port) || (a.VLAN != 0 && int(k.VLAN) != a.VLAN) {
			continue
		}
		del = append(del, k)
	}
	for _, k := range del {
		fdbM.Delete(k)
	}
	return map[string]int{"flushed": len(del)}, nil
}
