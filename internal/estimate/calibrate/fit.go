package calibrate

import (
	"fmt"
	"math"
	"sort"

	"github.com/edgenf/edgenf/internal/estimate"
)

// observation is one measured program: what it uses and what it cost.
type observation struct {
	name string
	uses []estimate.Use
	ns   float64
}

// fit finds the costs of terms that best explain the observations:
// least squares on relative errors (a 5 ns error weighs as much on a
// 50 ns program as 50 ns on a 500 ns one), every cost non-negative, by
// projected coordinate descent on the normal equations. Terms no
// observation uses are an error: the suite does not cover them.
func fit(terms []string, obs []observation) (map[string]float64, error) {
	idx := map[string]int{}
	for i, t := range terms {
		idx[t] = i
	}
	n := len(terms)
	g := make([][]float64, n)
	for i := range g {
		g[i] = make([]float64, n)
	}
	c := make([]float64, n)
	for _, o := range obs {
		if o.ns <= 0 {
			continue
		}
		row := make([]float64, n)
		for _, u := range o.uses {
			i, ok := idx[u.Term]
			if !ok {
				return nil, fmt.Errorf("%s uses %s, which the fit does not know", o.name, u.Term)
			}
			row[i] += u.N / o.ns
		}
		for i := range row {
			if row[i] == 0 {
				continue
			}
			c[i] += row[i] // (u/ns) * (ns/ns)
			for j := range row {
				g[i][j] += row[i] * row[j]
			}
		}
	}
	var missing []string
	for i, t := range terms {
		if g[i][i] == 0 {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("no measurement covers %v", missing)
	}
	x := make([]float64, n)
	for iter := 0; iter < 20000; iter++ {
		moved := 0.0
		for i := range x {
			s := c[i]
			for j := range x {
				if j != i {
					s -= g[i][j] * x[j]
				}
			}
			v := math.Max(0, s/g[i][i])
			moved = math.Max(moved, math.Abs(v-x[i]))
			x[i] = v
		}
		if moved < 1e-7 {
			break
		}
	}
	out := make(map[string]float64, n)
	for i, t := range terms {
		out[t] = math.Round(x[i]*1000) / 1000
	}
	return out, nil
}

// priceUses is what costs give for uses.
func priceUses(costs map[string]float64, uses []estimate.Use) float64 {
	t := 0.0
	for _, u := range uses {
		t += costs[u.Term] * u.N
	}
	return t
}
