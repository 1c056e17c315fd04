package engine

// What the engine asks of controllers outside a change: views, actions,
// the daemon's own services around a cube, periodic ticks and punted packets.

import (
	"encoding/json"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// View reads one of a cube's read-only views. An Unlocked view (a walk of
// a large map) runs after the engine's lock is released, on duplicated map
// handles (sweep.go).
func (e *Engine) View(who tenant.Actor, name, view string) (any, error) {
	e.mu.Lock()
	v, l, err := e.view(who, name, view)
	if err != nil || !v.Unlocked {
		defer e.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return v.List(&handle{e: e, l: l}, l.c)
	}
	h, err := e.detached(l)
	c := l.c // a change replaces it, or writes its tables only
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	defer h.release(e)
	return v.List(h, c)
}

func (e *Engine) view(who tenant.Actor, name, view string) (*cube.View, *live, error) {
	l, err := e.live(who, name)
	if err != nil {
		return nil, nil, err
	}
	if l.down != "" {
		return nil, nil, downErr(l)
	}
	for i := range l.typ.Views {
		if l.typ.Views[i].Name == view {
			return &l.typ.Views[i], l, nil
		}
	}
	return nil, nil, cube.NotFound("view", "NF type %s has no view %q", l.typ.Name, view)
}

// Action runs an operation on a cube.
func (e *Engine) Action(who tenant.Actor, name, action string, args json.RawMessage) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return nil, err
	}
	if l.down != "" {
		return nil, downErr(l)
	}
	for _, a := range l.typ.Actions {
		if a.Name != action {
			continue
		}
		var v any
		if a.Args != nil {
			var err error
			if v, err = cube.Decode("args", args, a.Args); err != nil {
				return nil, err
			}
		}
		return a.Do(&handle{e: e, l: l}, l.c, v)
	}
	return nil, cube.NotFound("action", "NF type %s has no action %q", l.typ.Name, action)
}

// WithHandle runs fn with the engine's lock held and the handle of a cube
// who may see: for the daemon's own services around a cube (a capture's
// reader opens the cube's ring).
func (e *Engine) WithHandle(who tenant.Actor, name string, fn func(h cube.Handle) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return err
	}
	if l.down != "" {
		return downErr(l)
	}
	return fn(&handle{e: e, l: l})
}

// tick runs the periodic work of controllers, in two phases: the Ticks,
// short, under the engine's lock; then the Sweeps (walks of large maps)
// without it, on duplicated map handles, so that a sweep of a million
// entries does not stall the API or the other cubes.
func (e *Engine) tick(now time.Time) {
	type sweep struct {
		s    cube.Sweeper
		dups *dupMaps
	}
	var sweeps []sweep
	e.mu.Lock()
	for _, l := range e.cubes {
		if t, ok := l.ctl.(cube.Ticker); ok {
			t.Tick(&handle{e: e, l: l}, l.c, now)
		}
		if s, ok := l.ctl.(cube.Sweeper); ok && l.down == "" {
			if d, err := e.dups(l); err == nil {
				sweeps = append(sweeps, sweep{s, d})
			} else {
				e.log.Warn("no sweep: cannot duplicate the cube's maps", "cube", l.c.Name, "err", err)
			}
		}
	}
	e.mu.Unlock()
	for _, sw := range sweeps {
		sw.s.Sweep(&offLock{dups: sw.dups, log: e.log}, now)
		e.mu.Lock()
		sw.dups.release()
		e.mu.Unlock()
	}
}

// punt hands a punted packet to its cube's controller.
func (e *Engine) punt(hook datapath.Hook, slot uint32, p cube.Punt) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.bySlot[slot]
	if l == nil || l.dc.Hook != hook {
		return
	}
	if p.Reason == datapath.PuntTransmit {
		// a copy the fast path could not make (copy.h): out of port Arg
		l.slowCopies++
		if err := (&handle{e: e, l: l}).Transmit(int(p.Arg), p.Frame); err != nil {
			e.log.Debug("slow-path copy not sent", "cube", l.c.Name, "port", p.Arg, "err", err)
		}
		return
	}
	if ph, ok := l.ctl.(cube.PuntHandler); ok {
		ph.HandlePunt(&handle{e: e, l: l}, l.c, p)
	}
}
