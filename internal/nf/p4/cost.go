package p4

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/p4path"
	"github.com/edgenf/edgenf/internal/p4/ir"
)

// The cost model of a P4 cube: the typical path of its program (p4path),
// with each table holding the entries the cube has. Its terms are
// calibrated by the P4 micro-programs of internal/estimate/calibrate.
func init() {
	terms := make([]estimate.Term, len(p4path.Terms))
	for i, t := range p4path.Terms {
		terms[i] = estimate.Term{Name: t.Name, Doc: t.Doc}
	}
	// Compiled programs hop through the panel only (EDGENF_PANEL_HOPS).
	estimate.Register(&estimate.Model{Type: "p4", Terms: terms, Uses: costUses, PanelHops: true})
}

func costUses(p *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	v, err := cube.Decode("config", c.Config, &Settings{})
	if err != nil {
		return nil, nil, err
	}
	s := v.(*Settings)
	prog, err := frontEnd(s)
	if err != nil {
		return nil, nil, err
	}
	entries := map[string]int{}
	for _, raw := range c.Tables["entries"] {
		var e struct {
			Table string `json:"table"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Table != "" {
			entries[e.Table]++
		}
	}
	pr, err := p4path.Enumerate(prog, p4path.Options{Entries: entries, CPUPort: s.CPUPort})
	if err != nil {
		return nil, nil, err
	}
	if p == nil {
		p = &estimate.Profile{Costs: map[string]float64{}}
	}
	t := p4path.Summarise(pr.Price(p)).Typical
	if t.Path == nil {
		return nil, nil, fmt.Errorf("the program has no path")
	}
	return t.Uses, []string{fmt.Sprintf("typical path #%d of %d: %s", t.ID, len(pr.Paths), t.Describe())}, nil
}

var (
	feMu    sync.Mutex
	feCache = map[[32]byte]*ir.Program{}
)

// frontEnd is the checked program of s: the compiled one when the cube's
// program is in the compile cache, else the front end's alone (no clang),
// cached.
func frontEnd(s *Settings) (*ir.Program, error) {
	if err := s.normalize(); err != nil {
		return nil, err
	}
	key := keyOf(s)
	if r, ok := lookup(key); ok {
		return r.Program, nil
	}
	feMu.Lock()
	defer feMu.Unlock()
	if prog, ok := feCache[key]; ok {
		return prog, nil
	}
	prog, err := p4path.Check(CompileOptions(s))
	if err != nil {
		return nil, cube.Errorf("config.program", "%v", err)
	}
	if len(feCache) >= cacheMaxPrograms {
		clear(feCache)
	}
	feCache[key] = prog
	return prog, nil
}
