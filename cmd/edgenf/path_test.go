package main

import "testing"

func TestV1EscapesEachSegment(t *testing.T) {
	for _, c := range []struct {
		segs []string
		want string
	}{
		{[]string{"cubes", "r1"}, "/v1/cubes/r1"},
		{[]string{"cubes", "r1", "tables", "routes", "198.18.0.0/24"}, "/v1/cubes/r1/tables/routes/198.18.0.0%2F24"},
		{[]string{"cubes", "a/b?c#d%", "views", "x"}, "/v1/cubes/a%2Fb%3Fc%23d%25/views/x"},
	} {
		if got := v1(c.segs...); got != c.want {
			t.Errorf("v1(%q) = %s, want %s", c.segs, got, c.want)
		}
	}
}
