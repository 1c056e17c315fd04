package cube

import "testing"

// A table's bound for a cube is its MaxOf, never above Max; without MaxOf,
// or when MaxOf cannot tell (0), it is Max.
func TestTableLimit(t *testing.T) {
	c := &Cube{Name: "c"}
	of := func(n int) func(*Cube) int { return func(*Cube) int { return n } }
	for _, tc := range []struct {
		tb   Table
		want int
	}{
		{Table{Max: 100}, 100},
		{Table{Max: 100, MaxOf: of(10)}, 10},
		{Table{Max: 100, MaxOf: of(1000)}, 100},
		{Table{Max: 100, MaxOf: of(0)}, 100},
		{Table{MaxOf: of(10)}, 10},
		{Table{}, 0},
	} {
		if got := tc.tb.Limit(c); got != tc.want {
			t.Errorf("Max %d, MaxOf %v: limit %d, want %d", tc.tb.Max, tc.tb.MaxOf != nil, got, tc.want)
		}
	}
}
