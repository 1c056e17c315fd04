package engine

import "github.com/edgenf/edgenf/internal/cube"

// AdmitChange is a change the admission check (Config.Admit) judges: the
// applied topology (Prev) and the one the change makes (Next), with what
// differs, so that the check prices only what the change can affect.
type AdmitChange struct {
	// Rev numbers Prev among the topologies the engine applied: applying
	// the change makes Next Rev+1 (every applied change is judged first).
	Rev        uint64
	Prev, Next *cube.Topology
	// Was are cubes of Prev as they were before the change altered them in
	// place (table entries written directly: Prev holds them altered).
	Was map[string]*cube.Cube
	// Cubes and Points are the cubes and attachment points that differ;
	// All: anything may (a declarative apply).
	Cubes, Points []string
	All           bool
}

// admit runs the admission check, if there is one, on next, a change of
// the applied topology whose differences are d.
func (e *Engine) admit(next *cube.Topology, d dirty) error {
	if e.cfg.Admit == nil {
		return nil
	}
	return e.cfg.Admit(AdmitChange{Rev: e.topoRev, Prev: e.topo, Next: next, Cubes: d.cubes, Points: d.points, All: d.all})
}
