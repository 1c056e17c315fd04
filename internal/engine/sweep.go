package engine

// Sweeps run off the engine's lock (controllers.go): they get duplicates
// of a cube's map handles, which stay valid whatever a change does to the
// cube meanwhile (a closed handle's number could be reused by another
// object: a sweep would then walk the wrong map).

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// dupMaps are duplicates of the maps of one loaded program, shared by the
// sweeps in flight and kept for the next tick while the program is the
// cube's. Guarded by e.mu.
type dupMaps struct {
	of   *datapath.Program
	maps map[string]*ebpf.Map
	refs int
	// retired: the cube's program changed or the cube went; closed by the
	// last release.
	retired bool
}

// dups returns the duplicates of l's maps, made if l's program changed,
// with one more reference. Called with e.mu held.
func (e *Engine) dups(l *live) (*dupMaps, error) {
	if l.dups != nil && l.dups.of != l.dc {
		l.dups.retire()
		l.dups = nil
	}
	if l.dups == nil {
		d := &dupMaps{of: l.dc, maps: map[string]*ebpf.Map{}}
		for name, m := range l.dc.Maps() {
			c, err := m.Clone()
			if err != nil {
				d.close()
				return nil, fmt.Errorf("map %s: %w", name, err)
			}
			d.maps[name] = c
		}
		l.dups = d
	}
	l.dups.refs++
	return l.dups, nil
}

// retire drops the duplicates once no sweep uses them. Called with e.mu
// held, when the cube goes or the engine closes.
func (d *dupMaps) retire() {
	d.retired = true
	if d.refs == 0 {
		d.close()
	}
}

func (d *dupMaps) release() {
	d.refs--
	if d.retired && d.refs == 0 {
		d.close()
	}
}

func (d *dupMaps) close() {
	for _, m := range d.maps {
		m.Close()
	}
	d.maps = nil
}

// dropDups retires l's duplicates (l goes, or the engine closes).
func dropDups(l *live) {
	if l.dups != nil {
		l.dups.retire()
		l.dups = nil
	}
}

// sweepHandle is a Sweeper's handle: the duplicated maps, and a log.
type sweepHandle struct {
	dups *dupMaps
	log  *slog.Logger
}

func (h *sweepHandle) Map(name string) (*ebpf.Map, error) {
	m, ok := h.dups.maps[name]
	if !ok {
		return nil, fmt.Errorf("cube %s has no map %q", h.dups.of.Name, name)
	}
	return m, nil
}

func (h *sweepHandle) Logf(format string, args ...any) {
	h.log.Info(fmt.Sprintf(format, args...), "cube", h.dups.of.Name)
}

var errNotInSweep = fmt.Errorf("not available to a sweep")

func (h *sweepHandle) Inject(int, []byte) error              { return errNotInSweep }
func (h *sweepHandle) Transmit(int, []byte) error            { return errNotInSweep }
func (h *sweepHandle) PortIface(int) (*net.Interface, bool)  { return nil, false }
func (h *sweepHandle) PrepareRedirect(int) error             { return errNotInSweep }
func (h *sweepHandle) AttachPoint() (string, []netip.Prefix) { return "", nil }
func (h *sweepHandle) Controller() cube.Controller           { return nil }
