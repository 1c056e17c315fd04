package sema

// Spelling suggestions for unknown names.

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// closest returns the candidate nearest to name (at most 2 edits, and less
// than half the name), or "".
func closest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(name, c)
		if d < bestD && d*2 <= len(name) {
			best, bestD = c, d
		}
	}
	return best
}

func (s *scope) visible() []string {
	var out []string
	for ; s != nil; s = s.parent {
		for n := range s.names {
			out = append(out, n)
		}
	}
	return out
}

// hint returns " (did you mean X?)" or "".
func hint(name string, candidates []string) string {
	if c := closest(name, candidates); c != "" {
		return " (did you mean " + c + "?)"
	}
	return ""
}

func fieldNames(st *Struct) []string {
	var out []string
	for _, f := range st.Fields {
		out = append(out, f.Name)
	}
	return out
}
