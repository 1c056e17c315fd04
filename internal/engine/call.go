package engine

import (
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Call runs fn on a cube's live program as an action runs: without the
// engine's lock, serialised with the other calls into the cube's
// controller (for who, refused while the cube is down). It is the typed
// way in for the daemon's other control planes (P4Runtime reaches a p4
// cube's registers and meters through nf/p4's functions), where REST
// clients name an action and pass JSON arguments.
func (e *Engine) Call(who tenant.Actor, name string, fn func(h cube.Handle, c *cube.Cube) error) error {
	e.mu.Lock()
	l, err := e.running(who, name)
	e.mu.Unlock()
	if err != nil {
		return err
	}
	return e.offLockCall(l, fn)
}
