package calibrate

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/measure"
	"github.com/edgenf/edgenf/internal/nfrig"
)

// ---------- NF models ----------

func (s *session) loadNFs() error {
	for _, m := range estimate.Models() {
		if m.Cases == nil {
			continue
		}
		cases := m.Cases(false)
		for i, c := range cases {
			if s.opt.Short && i > 0 {
				break
			}
			if err := s.loadNF(m, c); err != nil {
				return fmt.Errorf("%s case %q: %w", m.Type, c.Name, err)
			}
		}
	}
	return nil
}

func (s *session) loadNF(m *estimate.Model, c estimate.Case) error {
	nc, err := LoadCase(s.meter, m, c)
	if err != nil {
		return err
	}
	s.closer = append(s.closer, nc.Close)
	want, err := s.check(nc.Entry, c.Frame, "send")
	if err != nil {
		return err
	}
	s.items = append(s.items, item{Item: nc.Item(m.Type + ": " + c.Name), group: m.Type, uses: nc.Uses, verdict: &want})
	return nil
}

// NFCase is an NF type's case loaded (nfrig) at the meter's hook: the
// program a packet enters by, and what the model says the packet uses.
type NFCase struct {
	Cube  *cube.Cube
	Entry *ebpf.Program
	Uses  []estimate.Use
	rig   *nfrig.Rig
	frame []byte
	// what the case's Steady holds: before each run, the run's length
	before func() error
	repeat int
	stop   func()
	// measured a run per call (Case.ChangesSkb at TC)
	single bool
}

// Item is the case's measurement, named name.
func (c *NFCase) Item(name string) measure.Item {
	return measure.Item{Name: name, Prog: c.Entry, Frame: c.frame, Before: c.before, Repeat: c.repeat, Single: c.single}
}

// Close removes the case's datapath.
func (c *NFCase) Close() {
	if c.stop != nil {
		c.stop()
	}
	if c.Entry != nil {
		c.Entry.Close()
	}
	c.rig.Close()
}

// LoadCase loads an NF case: its cube, the entry of its port (or of a hop
// whose stack is the cube, for a transparent one), state set up and warm
// frames run.
func LoadCase(meter *measure.Meter, m *estimate.Model, c estimate.Case) (*NFCase, error) {
	typ, err := cube.Lookup(m.Type)
	if err != nil {
		return nil, err
	}
	model := c.Cube.Clone()
	model.Hook = meter.Hook()
	if model.Name == "" {
		model.Name = m.Type
	}
	uses := c.Uses
	if uses == nil {
		in := c.InPort
		if typ.Transparent {
			in = c.Dir.String()
		}
		if uses, _, err = m.Uses(nil, model, in); err != nil {
			return nil, err
		}
	}
	r, err := nfrig.Open(typ, model)
	if err != nil {
		return nil, err
	}
	nc := &NFCase{Cube: model, Uses: uses, rig: r, frame: c.Frame, repeat: c.Repeat, single: c.ChangesSkb && meter.Hook() == datapath.TC}
	if c.Setup != nil {
		if err := c.Setup(r.Handle()); err != nil {
			r.Close()
			return nil, err
		}
	}
	if typ.Transparent {
		nc.Entry, err = r.TransparentEntry(c.Dir)
	} else {
		nc.Entry, err = r.Entry(c.InPort)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := warm(meter, r, c, nc.Entry, typ.Transparent); err != nil {
		nc.Close()
		return nil, err
	}
	if c.Steady != nil {
		run := func(n int) error { _, err := meter.Run(nc.Entry, c.Frame, n); return err }
		if nc.before, nc.stop, err = c.Steady(r.Handle(), run); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return nc, nil
}

// warm runs a case's warm frames (on its WarmPort's entry, or entry; for
// a transparent cube, WarmPort names a direction).
func warm(m *measure.Meter, r *nfrig.Rig, c estimate.Case, entry *ebpf.Program, transparent bool) error {
	if transparent && c.WarmPort != "" && c.WarmPort != c.Dir.String() {
		dir := datapath.Ingress
		if c.WarmPort == datapath.Egress.String() {
			dir = datapath.Egress
		} else if c.WarmPort != datapath.Ingress.String() {
			return fmt.Errorf("warm frames of a transparent cube: direction %q", c.WarmPort)
		}
		e, err := r.TransparentEntry(dir)
		if err != nil {
			return err
		}
		defer e.Close()
		entry = e
	} else if !transparent && c.WarmPort != "" && c.WarmPort != c.InPort {
		e, err := r.Entry(c.WarmPort)
		if err != nil {
			return err
		}
		defer e.Close()
		entry = e
	}
	for _, f := range c.Warm {
		if _, err := m.Verdict(entry, f); err != nil {
			return err
		}
	}
	return nil
}
