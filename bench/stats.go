package bench

// The summaries of a scenario's repetitions: medians, ranges and the
// spread a reader needs to tell a ratio that is noise from one that is not.

import "sort"

// Spread summarises the per-repetition figures of a scenario: the range
// and interquartile range (the middle half: between the first and third
// quartiles, linearly interpolated) of its Mpps per CPU-s and of its ratios
// per CPU-s to the baseline, and the relative spread of its Mpps per CPU-s
// ((max − min) / median: for the baseline, how noisy the denominator of
// every ratio of its group was).
type Spread struct {
	MppsCPUMin float64 `json:"mpps_per_cpu_s_min"`
	MppsCPUMax float64 `json:"mpps_per_cpu_s_max"`
	MppsCPUQ1  float64 `json:"mpps_per_cpu_s_q1"`
	MppsCPUQ3  float64 `json:"mpps_per_cpu_s_q3"`
	MppsCPURel float64 `json:"mpps_per_cpu_s_rel_range"`
	RatioCPUQ1 float64 `json:"ratio_cpu_q1,omitempty"`
	RatioCPUQ3 float64 `json:"ratio_cpu_q3,omitempty"`
}

// Summarise sets r's summaries (medians, ranges, spread) from its
// per-repetition Mpps, Ratios, MppsCPU and RatiosCPU.
func Summarise(r *ScenarioResult) {
	if len(r.Mpps) > 0 {
		r.Median, r.Min, r.Max = stats(r.Mpps)
	}
	if len(r.Ratios) > 0 {
		r.Ratio, r.RatioMin, r.RatioMax = stats(r.Ratios)
	}
	if len(r.MppsCPU) > 0 {
		r.MedianCPU, _, _ = stats(r.MppsCPU)
	}
	if len(r.RatiosCPU) > 0 {
		r.RatioCPU, r.RatioCPUMin, r.RatioCPUMax = stats(r.RatiosCPU)
	}
	r.Spread = spread(r.MppsCPU, r.RatiosCPU)
}

// AddSpread sets the spread of the scenarios of r recorded without one.
func AddSpread(r *Results) {
	for gi := range r.Groups {
		for si := range r.Groups[gi].Scenarios {
			if s := &r.Groups[gi].Scenarios[si]; s.Spread == nil {
				s.Spread = spread(s.MppsCPU, s.RatiosCPU)
			}
		}
	}
}

// stats returns median, min and max.
func stats(v []float64) (med, lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// Quartiles returns the first and third quartiles of v, linearly
// interpolated between the sorted values (0, 0 for none).
func Quartiles(v []float64) (q1, q3 float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		x := q * float64(len(s)-1)
		i := int(x)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (x-float64(i))*(s[i+1]-s[i])
	}
	return at(0.25), at(0.75)
}

// spread summarises the repetitions' Mpps per CPU-s and ratios per CPU-s
// (nil without the former).
func spread(mppsCPU, ratiosCPU []float64) *Spread {
	if len(mppsCPU) == 0 {
		return nil
	}
	sp := &Spread{}
	med, lo, hi := stats(mppsCPU)
	sp.MppsCPUMin, sp.MppsCPUMax = lo, hi
	sp.MppsCPUQ1, sp.MppsCPUQ3 = Quartiles(mppsCPU)
	if med > 0 {
		sp.MppsCPURel = (hi - lo) / med
	}
	sp.RatioCPUQ1, sp.RatioCPUQ3 = Quartiles(ratiosCPU)
	return sp
}
