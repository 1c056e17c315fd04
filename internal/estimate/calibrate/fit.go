package calibrate

import (
	"fmt"
	"math"
	"sort"

	"github.com/edgenf/edgenf/internal/estimate"
	"github.com/edgenf/edgenf/internal/estimate/p4path"
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

// ---------- the profile ----------

func (s *session) fit(p *estimate.Profile) error {
	byGroup := map[string][]observation{}
	var order []string
	for _, it := range s.items {
		if it.group == "framework" || it.group == "single" {
			continue
		}
		if _, ok := byGroup[it.group]; !ok {
			order = append(order, it.group)
		}
		byGroup[it.group] = append(byGroup[it.group], observation{name: it.Name, uses: it.uses, ns: it.res.NS})
	}
	if err := s.fitFramework(p); err != nil {
		return err
	}
	var builtin *estimate.Profile
	if s.opt.Short {
		b, err := estimate.Builtin(s.opt.Hook)
		if err != nil {
			return err
		}
		builtin = b
	}
	for _, g := range order {
		terms := groupTerms(g)
		var costs map[string]float64
		var err error
		if s.opt.Short {
			costs = scaled(builtin, terms, byGroup[g])
		} else if costs, err = fit(terms, byGroup[g]); err != nil {
			return fmt.Errorf("fitting %s: %w", g, err)
		}
		for t, v := range costs {
			p.Costs[t] = v
		}
	}
	for _, it := range s.items {
		mdl := s.frameworkModel[it.Name]
		if it.group != "framework" {
			mdl = priceUses(p.Costs, it.uses)
		}
		p.Measurements = append(p.Measurements, estimate.Measurement{Name: it.Name, Group: it.group, NS: round(it.res.NS), Lo: round(it.res.Lo), Hi: round(it.res.Hi), Model: round(mdl)})
	}
	return nil
}

// groupTerms are the terms a group of observations fits.
func groupTerms(group string) []string {
	var ts []string
	if group == "p4" {
		for _, t := range p4path.Terms {
			ts = append(ts, t.Name)
		}
		return ts
	}
	if m, ok := estimate.ModelOf(group); ok {
		for _, t := range m.Terms {
			ts = append(ts, t.Name)
		}
	}
	return ts
}

// scaled is the built-in profile's costs of terms, times the median ratio
// of the observations to what the built-in profile predicts for them.
func scaled(b *estimate.Profile, terms []string, obs []observation) map[string]float64 {
	var ratios []float64
	for _, o := range obs {
		if pred := priceUses(b.Costs, o.uses); pred > 0 && o.ns > 0 {
			ratios = append(ratios, o.ns/pred)
		}
	}
	k := 1.0
	if len(ratios) > 0 {
		sort.Float64s(ratios)
		k = ratios[len(ratios)/2]
	}
	out := map[string]float64{}
	for _, t := range terms {
		out[t] = round(b.Costs[t] * k)
	}
	return out
}

func round(x float64) float64 { return float64(int64(x*100+0.5*sign(x))) / 100 }

func sign(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}
