package lb

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/counters"
)

// ServiceStatus is a service with its backends' state and counters.
type ServiceStatus struct {
	Service   string          `json:"service"`
	Mode      string          `json:"mode"`
	TableSize uint32          `json:"table_size"`
	Backends  []BackendStatus `json:"backends"`
}

// BackendStatus is one backend of a service.
type BackendStatus struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	State   string `json:"state"`
	Weight  uint32 `json:"weight"`
	// TableShare is the fraction of the Maglev table (of new flows) it gets.
	TableShare float64 `json:"table_share"`
	Flows      uint64  `json:"flows"`
	Packets    uint64  `json:"packets"`
	Bytes      uint64  `json:"bytes"`
}

// Connection is one flow of the connection table.
type Connection struct {
	Client  string `json:"client"`
	Service string `json:"service"`
	Backend string `json:"backend"`
}

func readBEStats(h cube.Handle, id uint32) (beStats, error) {
	m, err := h.Map("lb_be_stats")
	if err != nil {
		return beStats{}, err
	}
	var per []beStats
	if err := m.Lookup(id, &per); err != nil {
		return beStats{}, err
	}
	var s beStats
	for _, x := range per {
		s.Packets += x.Packets
		s.Bytes += x.Bytes
		s.Flows += x.Flows
	}
	return s, nil
}

// Services lists every service with its backends.
func Services(h cube.Handle, c *cube.Cube) ([]ServiceStatus, error) {
	ctl := cube.ControllerOf[*controller](h)
	svcs, err := resolve(c)
	if err != nil {
		return nil, err
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	out := []ServiceStatus{}
	for _, r := range svcs {
		key := r.svc.Key()
		ss := ServiceStatus{Service: key, Mode: r.svc.Mode, TableSize: r.svc.TableSize}
		st := ctl.services[key]
		for _, b := range r.backends {
			bs := BackendStatus{Name: b.Name, Address: b.Address, State: b.State, Weight: *b.Weight}
			if st != nil {
				bs.TableShare = float64(st.share[b.Name]) / float64(st.size)
			}
			if id, ok := ctl.beIDs[beRef{key, b.Name}]; ok {
				s, err := readBEStats(h, id)
				if err != nil {
					return nil, err
				}
				bs.Flows, bs.Packets, bs.Bytes = s.Flows, s.Packets, s.Bytes
			}
			ss.Backends = append(ss.Backends, bs)
		}
		out = append(out, ss)
	}
	return out, nil
}

const maxListedConns = 10000

func listConns(h cube.Handle, c *cube.Cube) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	m, err := h.Map("lb_conns")
	if err != nil {
		return nil, err
	}
	ctl.mu.Lock()
	names := map[uint32]string{}
	for r, id := range ctl.beIDs {
		names[id] = r.name
	}
	ctl.mu.Unlock()
	out := []Connection{}
	var k connKey
	var v connVal
	it := m.Iterate()
	for it.Next(&k, &v) && len(out) < maxListedConns {
		svc := svcKey{VIP: k.Daddr, Port: k.Dport, Proto: k.Proto, Family: k.Family}
		out = append(out, Connection{
			Client:  netip.AddrPortFrom(addrOf(k.Saddr, k.Family), htons(k.Sport)).String(),
			Service: svc.key(),
			Backend: names[v.Backend],
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Client < out[j].Client })
	return out, nil
}

func flushConns(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
	n, err := flush[connVal](h, "lb_conns")
	if err != nil {
		return nil, err
	}
	if _, err := flush[natVal](h, "lb_nat"); err != nil {
		return nil, err
	}
	return map[string]int{"flushed": n}, nil
}

// flush deletes every entry of a map of connections whose values are Vs,
// and returns how many it deleted.
func flush[V any](h cube.Handle, name string) (int, error) {
	m, err := h.Map(name)
	if err != nil {
		return 0, err
	}
	var keys []connKey
	var k connKey
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	for _, k := range keys {
		m.Delete(k)
	}
	return len(keys), nil
}

// resetBackends zeroes every backend's counters (after the cube's own).
func resetBackends(h cube.Handle) error {
	bm, err := h.Map("lb_be_stats")
	if err != nil {
		return err
	}
	keys := make([]uint32, MaxBackends)
	for i := range keys {
		keys[i] = uint32(i)
	}
	return counters.Zero[beStats](bm, keys...)
}
