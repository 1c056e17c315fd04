package estimate

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
)

// Admission refuses a topology change that would push the estimate of a
// chain past a per-core budget: an operator placing tenants' chains on a
// few cores keeps each under what one core can spend per packet.
//
// Chains are admitted in groups, a group costing what its dearest chain
// does: a slice's chains (into its chain and back, whatever cubes they
// cross) form one group, held to the slice's own budget when it has one
// and it is tighter than BudgetNS; any other chain is grouped with those
// between the same two interfaces.
type Admission struct {
	Estimator *Estimator
	// BudgetNS is the daemon's budget (-core-budget-ns; 0: only slices'
	// own budgets are enforced).
	BudgetNS float64

	// what CheckChange keeps (incremental.go)
	mu      sync.Mutex
	state   *admitted
	pending *delta
	costs   cubeCosts
	// walked counts the chains CheckChange walked and priced (Walked).
	walked int64
}

// Walked is how many chains the incremental check walked and priced so
// far: what a change costs it.
func (a *Admission) Walked() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.walked
}

// group is an admission group's dearest chain and its budget.
type group struct {
	ChainCost
	budget    float64
	sliceOwn  bool // budget is the slice's own
	hasBudget bool
}

// Check returns an error when next has a group whose estimate is over its
// budget and higher than in prev (a group already over the budget may
// shrink, or stay as it is, but not grow). A group prev did not have is
// held to the dearest group of prev entered by the same interface: a
// change that only removes or moves cubes never makes packets from an
// interface dearer. A slice's own budget set or tightened by the change
// is checked whatever the slice cost before. The error gives the numbers,
// hop by hop.
func (a *Admission) Check(prev, next *cube.Topology) error {
	if a == nil || (a.BudgetNS <= 0 && !HasSliceBudget(next)) {
		return nil
	}
	costs := newCubeCosts() // the cubes prev and next share are priced once
	before, err := a.groups(prev, costs)
	if err != nil {
		return err
	}
	after, err := a.groups(next, costs)
	if err != nil {
		return cube.Errorf("", "estimating the change: %v", err)
	}
	return verdict(before, after)
}

// verdict judges the groups after a change against those before it (see
// Check).
func verdict(before, after map[string]group) error {
	var over []string
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := after[k]
		if !g.hasBudget || g.NS <= g.budget {
			continue
		}
		was, existed := before[k]
		now := ""
		newBudget := g.sliceOwn && (!existed || !was.sliceOwn || was.budget != g.budget)
		if existed {
			now = fmt.Sprintf("; it costs %.1f ns now", was.NS)
		} else if was, existed = dearestFrom(before, g.From); existed {
			now = fmt.Sprintf("; packets from %s cost at most %.1f ns now", g.From, was.NS)
		}
		if !newBudget && existed && g.NS <= was.NS+0.05 {
			continue
		}
		which := fmt.Sprintf("the core budget of %.0f ns", g.budget)
		if g.sliceOwn {
			which = fmt.Sprintf("the slice's budget of %.0f ns", g.budget)
		}
		what := "chain " + g.ID
		if g.Slice != "" {
			what = fmt.Sprintf("slice %s: chain %s", g.Slice, g.ID)
		}
		over = append(over, fmt.Sprintf("%s would cost %.1f ns per packet (%s), over %s%s",
			what, g.NS, hopList(g.ChainCost), which, now))
	}
	if len(over) == 0 {
		return nil
	}
	return cube.Conflict("core_budget_ns", "refused: %s", strings.Join(over, "; "))
}

func (a *Admission) groups(t *cube.Topology, costs cubeCosts) (map[string]group, error) {
	if t == nil {
		return map[string]group{}, nil
	}
	chains, err := a.Estimator.topology(t, costs)
	if err != nil {
		return nil, err
	}
	return a.groupsOf(chains), nil
}

// groupsOf groups chains, listed as Chains lists them: a group is its
// first dearest chain.
func (a *Admission) groupsOf(chains []ChainCost) map[string]group {
	out := map[string]group{}
	for _, cc := range chains {
		k := groupKey(cc)
		g := group{ChainCost: cc, budget: a.BudgetNS, hasBudget: a.BudgetNS > 0}
		if cc.Slice != "" && cc.BudgetNS > 0 && (a.BudgetNS <= 0 || cc.BudgetNS < a.BudgetNS) {
			g.budget, g.sliceOwn, g.hasBudget = cc.BudgetNS, true, true
		}
		if cur, ok := out[k]; !ok || cc.NS > cur.NS {
			out[k] = g
		}
	}
	return out
}

// dearestFrom is the dearest group whose dearest chain is entered by the
// interface from.
func dearestFrom(groups map[string]group, from string) (group, bool) {
	var best group
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
