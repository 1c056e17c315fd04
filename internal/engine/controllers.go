package engine

// What the engine asks of controllers outside a change: views, actions,
// the daemon's own services around a cube, periodic ticks and punted packets.

import (
	"encoding/json"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
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
	h, err := e.detached(l, false)
	c := l.c // a change replaces it, or writes its tables only
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	defer h.release(e)
	return v.List(h, c)
}

func (e *Engine) view(who tenant.Actor, name, view string) (*cube.View, *live, error) {
	l, err := e.running(who, name)
	if err != nil {
		return nil, nil, err
	}
	for i := range l.typ.Views {
		if l.typ.Views[i].Name == view {
			return &l.typ.Views[i], l, nil
		}
	}
	return nil, nil, cube.NotFound("view", "NF type %s has no view %q", l.typ.Name, view)
}

// Action runs an operation on a cube. It runs without the engine's lock
// (a slow action on one cube, a flush of a million connections, say, does
// not hold up the API and the other cubes), serialised with the other
// calls into the cube's controller, on a handle of duplicated maps.
func (e *Engine) Action(who tenant.Actor, name, action string, args json.RawMessage) (any, error) {
	e.mu.Lock()
	l, err := e.running(who, name)
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	var a *cube.Action
	for i := range l.typ.Actions {
		if l.typ.Actions[i].Name == action {
			a = &l.typ.Actions[i]
		}
	}
	e.mu.Unlock()
	if a == nil {
		return nil, cube.NotFound("action", "NF type %s has no action %q", l.typ.Name, action)
	}
	if a.Injects {
		if err := e.takeInject(who); err != nil {
			return nil, err
		}
	}
	var v any
	if a.Args != nil {
		if v, err = cube.Decode("args", args, a.Args); err != nil {
			return nil, err
		}
	}
	var out any
	err = e.offLockCall(l, func(h cube.Handle, c *cube.Cube) (err error) {
		out, err = a.Do(h, c, v)
		return err
	})
	return out, err
}

// offLockCall runs fn, a call into l's controller, without the engine's
// lock: on a handle of duplicated maps and what else a call may ask, read
// now, and the cube as synced now (a change replaces l.c, and copies a
// table it changes while such calls read it). Controllers guard their own
// state against concurrent calls, as they do against their sweeps. A cube
// unloaded meanwhile is missing.
func (e *Engine) offLockCall(l *live, fn func(h cube.Handle, c *cube.Cube) error) error {
	e.mu.Lock()
	if l.gone.Load() || l.c == nil {
		e.mu.Unlock()
		return noCube(l.dc.Name)
	}
	h, err := e.detached(l, true)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	c := l.c
	l.readers++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		l.readers--
		h.dups.release()
		e.mu.Unlock()
	}()
	return fn(h, c)
}

// WithHandle runs fn with the engine's lock held and the handle of a cube
// who may see: for the daemon's own services around a cube (a capture's
// reader opens the cube's ring).
func (e *Engine) WithHandle(who tenant.Actor, name string, fn func(h cube.Handle) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.running(who, name)
	if err != nil {
		return err
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
