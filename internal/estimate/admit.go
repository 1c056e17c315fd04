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
	// that of its dearest chain. Nil: the chains between two interfaces
	// (Chain.From, Chain.To), whatever cubes they cross. Slices group
	// their chains by slice.
	Group func(ChainCost) string
}

// Check returns an error when next has a group whose estimate is over the
// budget and higher than in prev (a group already over the budget may
// shrink, or stay as it is, but not grow). A group prev did not have is
// held to the dearest group of prev entered by the same interface: a
// change that only removes or moves cubes never makes packets from an
// interface dearer. The error gives the numbers, hop by hop.
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
		now := ""
		if existed {
			now = fmt.Sprintf("; it costs %.1f ns now", was.NS)
		} else if was, existed = dearestFrom(before, cc.From); existed {
			now = fmt.Sprintf("; packets from %s cost at most %.1f ns now", cc.From, was.NS)
		}
		if existed && cc.NS <= was.NS+0.05 {
			continue
		}
		over = append(over, fmt.Sprintf("chain %s would cost %.1f ns per packet (%s), over the core budget of %.0f ns%s",
			cc.ID, cc.NS, hopList(cc), a.BudgetNS, now))
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
		k := cc.From + " → " + cc.To
		if a.Group != nil {
			k = a.Group(cc)
		}
		if cur, ok := out[k]; !ok || cc.NS > cur.NS {
			out[k] = cc
		}
	}
	return out, nil
}

// dearestFrom is the dearest group whose dearest chain is entered by the
// interface from.
func dearestFrom(groups map[string]ChainCost, from string) (ChainCost, bool) {
	var best ChainCost
	found := false
	for _, cc := range groups {
		if cc.From == from && (!found || cc.NS > best.NS) {
			best, found = cc, true
		}
	}
	return best, found
}

func hopList(cc ChainCost) string {
	parts := make([]string, 0, len(cc.Hops))
	for _, h := range cc.Hops {
		parts = append(parts, fmt.Sprintf("%s %s %.1f", h.Type, h.Cube, h.NS))
	}
	return strings.Join(parts, " + ")
}
