package main

import (
	"flag"
	"fmt"
	"log/slog"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/estimate"
)

// estimateFlags configure the cost estimates: what `edgenf apply --dry-run`
// reports for each chain, and the admission check against a per-core
// budget (-core-budget-ns).
type estimateFlags struct {
	budget   float64
	profiles string
	est      *estimate.Estimator
}

var est estimateFlags

func (f *estimateFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&f.budget, "core-budget-ns", 0, "refuse a change that would push a chain's estimated cost per packet past `N` ns, a slice's chains taken together "+
		"(0: only slices' own budget_ns); the estimate is that of edgenf estimate, with this machine's profile")
	fs.StringVar(&f.profiles, "estimate-profiles", estimate.DefaultDir, "`directory` of the calibrated profiles (xdp.json, tc.json; edgenf estimate calibrate writes them); missing: the built-in ones")
}

// configure loads the profiles and, with a budget, sets the engine's
// admission check.
func (f *estimateFlags) configure(cfg *engine.Config, log *slog.Logger) error {
	if f.budget < 0 {
		return fmt.Errorf("-core-budget-ns %v: want a positive number of ns, or 0", f.budget)
	}
	f.est = &estimate.Estimator{Profiles: map[datapath.Hook]*estimate.Profile{}}
	for _, h := range []datapath.Hook{datapath.XDP, datapath.TC} {
		path := ""
		if f.profiles != estimate.DefaultDir {
			path = f.profiles + "/" + string(h) + ".json"
		}
		p, notes, err := estimate.Resolve(path, h)
		if err != nil {
			return err
		}
		p, more := p.WithDefaults()
		for _, n := range append(notes, more...) {
			log.Info("estimate", "hook", h, "note", n)
		}
		f.est.Profiles[h] = p
	}
	// Slices' own budgets (budget_ns) are enforced with or without a
	// daemon-wide one; with neither, Check returns at once.
	adm := &estimate.Admission{Estimator: f.est, BudgetNS: f.budget}
	cfg.Admit = func(ch engine.AdmitChange) error { return adm.CheckChange(estimate.Change(ch)) }
	if f.budget > 0 {
		log.Info("admission control", "core_budget_ns", f.budget)
	}
	return nil
}

// chains estimates a topology's chains (dry runs).
func (f *estimateFlags) chains(t *cube.Topology) ([]estimate.ChainCost, error) {
	if f.est == nil {
		return nil, nil
	}
	return f.est.Topology(t)
}
