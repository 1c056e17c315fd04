package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
)

// PinnedCubes lists the cubes pinned under the root (loaded by this daemon
// or an earlier one), by name.
func (d *Datapath) PinnedCubes() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(d.root, "cubes"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// PinnedStub is a framework program pinned on an interface.
type PinnedStub struct {
	Iface string
	Hook  Hook
	Dir   Direction
}

func (p PinnedStub) String() string { return fmt.Sprintf("%s (%s %s)", p.Iface, p.Hook, p.Dir) }

// PinnedStubs lists the interface programs pinned under the root.
func (d *Datapath) PinnedStubs() ([]PinnedStub, error) {
	ents, err := os.ReadDir(filepath.Join(d.root, "ifaces"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []PinnedStub
	for _, e := range ents {
		// stubDir: <iface, dots as colons>_<hook>_<direction>
		parts := strings.Split(e.Name(), "_")
		if !e.IsDir() || len(parts) < 3 {
			continue
		}
		n := len(parts)
		s := PinnedStub{Iface: strings.ReplaceAll(strings.Join(parts[:n-2], "_"), ":", "."), Hook: Hook(parts[n-2])}
		switch parts[n-1] {
		case Ingress.String():
			s.Dir = Ingress
		case Egress.String():
			s.Dir = Egress
		default:
			continue
		}
		if s.Hook != XDP && s.Hook != TC {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// PortState reads where the kernel sends each of the cube's ports, and its
// XDP flood set: what an adopted cube has, so that a restart removes what
// the state no longer names instead of rewriting only what it does.
func (c *Program) PortState() (hops map[int]Hop, flood map[int]int, err error) {
	hops, flood = map[int]Hop{}, map[int]int{}
	ports, err := c.Map(MapPorts)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < MaxPorts; i++ {
		var h Hop
		if err := ports.Lookup(uint32(i), &h); err != nil {
			return nil, nil, fmt.Errorf("cube %s port %d: %w", c.Name, i, err)
		}
		if h != (Hop{}) {
			hops[i] = h
		}
	}
	if m, ok := c.maps[MapFlood]; ok {
		var k, v uint32
		it := m.Iterate()
		for it.Next(&k, &v) {
			flood[int(k)] = int(v)
		}
		if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, nil, err
		}
	}
	return hops, flood, nil
}
