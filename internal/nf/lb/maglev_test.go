package lb

import (
	"fmt"
	"testing"
)

func counts(t []int, n int) []int {
	c := make([]int, n)
	for _, b := range t {
		c[b]++
	}
	return c
}

func TestMaglevFilledByWeight(t *testing.T) {
	for _, m := range []uint32{7, 251, 65537, 131071} {
		names := []string{"a", "b", "c", "d"}
		weights := []uint32{1, 2, 3, 4}
		tab := Maglev(names, weights, m)
		c := counts(tab, 4)
		total := 0
		for i, w := range weights {
			exact := float64(m) * float64(w) / 10
			if float64(c[i]) < exact-1 || float64(c[i]) > exact+1 {
				t.Errorf("m=%d backend %s weight %d: %d entries, want %.1f±1", m, names[i], w, c[i], exact)
			}
			total += c[i]
		}
		if total != int(m) {
			t.Errorf("m=%d: %d entries filled", m, total)
		}
	}
	// Deterministic: same input, same table.
	a, b := Maglev([]string{"x", "y"}, []uint32{1, 1}, 251), Maglev([]string{"x", "y"}, []uint32{1, 1}, 251)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("not deterministic")
		}
	}
	if tab := Maglev(nil, nil, 7); tab[0] != -1 {
		t.Error("empty backend set must leave the table empty")
	}
}

// disruption returns the fraction of entries that change owner among those
// not owned by the removed backend.
func disruption(before, after []int, beforeNames, afterNames []string, removed string) float64 {
	moved, kept := 0, 0
	for i := range before {
		old := beforeNames[before[i]]
		if old == removed {
			continue
		}
		kept++
		if afterNames[after[i]] != old {
			moved++
		}
	}
	return float64(moved) / float64(kept)
}

// TestMaglevMinimalDisruption measures what removing (or adding) one
// backend does to the entries of the others; Maglev's paper reports a few
// percent for tables of this size.
func TestMaglevMinimalDisruption(t *testing.T) {
	const m = 65537
	for _, n := range []int{4, 10, 50} {
		names := make([]string, n)
		weights := make([]uint32, n)
		for i := range names {
			names[i] = fmt.Sprintf("backend-%d", i)
			weights[i] = 1
		}
		before := Maglev(names, weights, m)
		worst := 0.0
		for r := 0; r < n; r++ {
			rest := append(append([]string{}, names[:r]...), names[r+1:]...)
			after := Maglev(rest, weights[:n-1], m)
			d := disruption(before, after, names, rest, names[r])
			worst = max(worst, d)
			// Every entry of the removed backend went to the others.
			for i := range before {
				if names[before[i]] == names[r] && rest[after[i]] == names[r] {
					t.Fatal("removed backend still in the table")
				}
			}
		}
		t.Logf("%d backends, M=%d: removing one moves at most %.2f%% of the other backends' entries", n, m, worst*100)
		if worst > 0.02 {
			t.Errorf("%d backends: removing one moves %.2f%% of the others' entries (want ≤ 2%%)", n, worst*100)
		}
		// Adding one back: only entries given to the new backend change, plus a little.
		added := append(append([]string{}, names...), "backend-new")
		after := Maglev(added, append(append([]uint32{}, weights...), 1), m)
		moved := 0
		for i := range before {
			if names[before[i]] != added[after[i]] && added[after[i]] != "backend-new" {
				moved++
			}
		}
		t.Logf("%d backends: adding one moves %.2f%% of entries between existing backends", n, 100*float64(moved)/m)
		if float64(moved)/m > 0.02 {
			t.Errorf("adding a backend moved %.2f%% between existing backends", 100*float64(moved)/m)
		}
	}
}

func TestIsPrime(t *testing.T) {
	for n, want := range map[uint32]bool{0: false, 1: false, 2: true, 7: true, 9: false, 65537: true, 65536: false, 131071: true, 131073: false} {
		if IsPrime(n) != want {
			t.Errorf("IsPrime(%d) != %v", n, want)
		}
	}
}
