package engine

// Loading a cube's program: its object, the verifier's verdict explained,
// hot swap and reprogramming keeping the maps.

import (
	"crypto/sha256"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/tenant"
)

// Swap reloads a cube's program, from obj or (nil) from its NF type, keeping
// its maps; one patch-panel update switches traffic to the new program.
// Only the administrator loads an object of its own: a tenant's cubes run
// the programs of their NF types or P4 programs the daemon compiled.
func (e *Engine) Swap(who tenant.Actor, name string, obj []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, err := e.live(who, name)
	if err != nil {
		return err
	}
	if obj != nil && !who.IsAdmin() {
		return cube.Forbidden("object", "only an administrator swaps in an eBPF object; a tenant's cubes run their NF type's program or a P4 program the daemon compiled")
	}
	if l.down != "" {
		return downErr(l)
	}
	if obj == nil {
		var err error
		if obj, err = l.typ.ObjectOf(l.c); err != nil {
			return err
		}
	}
	spec, err := l.typ.SpecOf(l.c, obj)
	if err != nil {
		return cube.Errorf("object", "%v", err)
	}
	dc, err := e.dp.LoadCube(name, l.dc.Hook, l.dc.Slot, spec, nil)
	if err != nil {
		return cube.Errorf("object", "%v", err)
	}
	l.dc.Close()
	l.dc, l.puntSet = dc, false
	if err := e.writePuntBudget(l, l.c.Tenant); err != nil {
		return err
	}
	// An object of the administrator's lasts until the daemon restarts,
	// which reloads the program the state names (upgrade.go).
	e.recordDigest(dc, pinDigest(dc.Hook, sha256.Sum256(obj)))
	// Interfaces entered directly into the cube run a copy of the old
	// program: give them the new one.
	return e.reconcile(e.topo, false)
}

func (e *Engine) loadCube(c *cube.Cube, adopt bool) (*live, error) {
	l, spec, err := e.newLive(c)
	if err != nil {
		return nil, err
	}
	typ := l.typ
	slot := e.slots[c.Name]
	adopted := false
	if adopt {
		if adopted, err = e.adoptPinned(c, l, slot, spec); err != nil { // upgrade.go
			return nil, err
		}
	}
	if !adopted {
		if l.dc, err = e.dp.ReloadCube(c.Name, c.Hook, slot, spec, datapath.LoadOptions{Reprogram: typ.ObjectFor != nil}); err != nil {
			return nil, explain(typ, c, err)
		}
		e.recordDigest(l.dc, pinDigest(c.Hook, l.obj))
	}
	// also when adopted: the owner's quota or the daemon's flags may have
	// changed while it was down
	if err := e.writePuntBudget(l, c.Tenant); err != nil {
		l.dc.Close()
		return nil, err
	}
	return l, nil
}

// newLive is a cube not yet loaded: its NF type, controller and object.
func (e *Engine) newLive(c *cube.Cube) (*live, *ebpf.CollectionSpec, error) {
	typ, err := cube.Lookup(c.Type)
	if err != nil {
		return nil, nil, err
	}
	obj, err := typ.ObjectOf(c)
	if err != nil {
		return nil, nil, err
	}
	spec, err := e.spec(typ, c, obj)
	if err != nil {
		return nil, nil, err
	}
	return &live{typ: typ, ctl: typ.New(), hops: map[int]datapath.Hop{}, chainHops: map[int]datapath.Hop{}, flood: map[int]int{}, obj: sha256.Sum256(obj)}, spec, nil
}

// spec parses cube c's object. The objects of NF types without per-cube
// objects or map sizes are parsed once and shared by all their cubes
// (10,000 cubes, one spec).
func (e *Engine) spec(typ *cube.Type, c *cube.Cube, obj []byte) (*ebpf.CollectionSpec, error) {
	if typ.ObjectFor != nil || typ.SizeMaps != nil {
		return typ.SpecOf(c, obj)
	}
	sum := sha256.Sum256(obj)
	if s, ok := e.specs[sum]; ok {
		return s, nil
	}
	s, err := typ.SpecOf(c, obj)
	if err != nil {
		return nil, err
	}
	e.specs[sum] = s
	return s, nil
}

// explain lets the NF type put a load failure in its own terms.
func explain(t *cube.Type, c *cube.Cube, err error) error {
	if t.ExplainLoadError != nil {
		return t.ExplainLoadError(c, err)
	}
	return err
}

// reprogram swaps a cube's program when its settings select another object
// (a P4 cube given a new program): one panel update, maps of unchanged
// layout kept.
func (e *Engine) reprogram(l *live, c *cube.Cube) error {
	if l.typ.ObjectFor == nil {
		return nil
	}
	obj, err := l.typ.ObjectOf(c)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(obj)
	if sum == l.obj {
		return nil
	}
	spec, err := l.typ.SpecOf(c, obj)
	if err != nil {
		return err
	}
	dc, err := e.dp.ReloadCube(c.Name, c.Hook, l.dc.Slot, spec, datapath.LoadOptions{Reprogram: true})
	if err != nil {
		return explain(l.typ, c, err)
	}
	l.dc.Close()
	l.dc, l.obj, l.puntSet = dc, sum, false // the budget's map may be new
	e.recordDigest(dc, pinDigest(c.Hook, sum))
	l.hops, l.flood = map[int]datapath.Hop{}, map[int]int{} // new maps: rewrite
	return nil
}
