package estimate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
)

// Admission refuses a topology change that would push the estimate of a
// chain past a per-core budget: an operator placing tenants' chains on a
// few cores keeps each under what one core can spend per packet.
type Admission struct {
	Estimator *Estimator
	BudgetNS  float64
	// Group names what the budget applies to; the estimate of a group is
	// that of its dearest chain. Nil: each chain by its route (Chain.ID).
	// Slices group their chains by slice.
	Group func(ChainCost) string
}

// Check returns an error when next has a group whose estimate is over the
// budget and higher than in prev (a group already over the budget may
// shrink, or stay as it is, but not grow). The error gives the numbers,
// hop by hop.
func (a *Admission) Check(prev, next *cube.Topology) error {
	if a == nil || a.BudgetNS <= 0 {
		return nil
	}
	costs := cubeCosts{} // the cubes prev and next share are priced once
	before, err := a.groups(prev, costs)
	if err != nil {
		return err
	}
	after, err := a.groups(next, costs)
	if err != nil {
		return cube.Errorf("", "estimating the change: %v", err)
	}
	var over []string
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cc := after[k]
		if cc.NS <= a.BudgetNS {
			continue
		}
		was, existed := before[k]
		if existed && cc.NS <= was.NS+0.05 {
			continue
		}
		msg := fmt.Sprintf("chain %s would cost %.1f ns per packet (%s), over the core budget of %.0f ns", cc.ID, cc.NS, hopList(cc), a.BudgetNS)
		if existed {
			msg += fmt.Sprintf("; it costs %.1f ns now", was.NS)
		}
		over = append(over, msg)
	}
	if len(over) == 0 {
		return nil
	}
	return cube.Conflict("core_budget_ns", "refused: %s", strings.Join(over, "; "))
}

func (a *Admission) groups(t *cube.Topology, costs cubeCosts) (map[string]ChainCost, error) {
	out := map[string]ChainCost{}
	if t == nil {
		return out, nil
	}
	chains, err := a.Estimator.topology(t, costs)
	if err != nil {
		return nil, err
	}
	for _, cc := range chains {
		k := cc.ID
		if a.Group != nil {
			k = a.Group(cc)
		}
		if cur, ok := out[k]; !ok || cc.NS > cur.NS {
			out[k] = cc
		}
	}
	return out, nil
}

func hopList(cc ChainCost) string {
	parts := make([]string, 0, len(cc.Hops))
	for _, h := range cc.Hops {
		parts = append(parts, fmt.Sprintf("%s %s %.1f", h.Type, h.Cube, h.NS))
	}
	return strings.Join(parts, " + ")
}
