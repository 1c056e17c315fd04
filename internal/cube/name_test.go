package cube

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidNameIsThePattern: the hand-written check accepts exactly what the
// documented pattern does.
func TestValidNameIsThePattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)
	cases := []string{"", "a", "A", "0a", "_a", "-a", "a0", "a_b-c", "a.b", "a:b", "a b", "é", "aé",
		strings.Repeat("a", 32), strings.Repeat("a", 33), "Z9", "z-", "a\x00", "a/b"}
	for b := 0; b < 256; b++ {
		cases = append(cases, "a"+string(rune(b)), string([]byte{byte(b)}), string([]byte{'a', byte(b)}))
	}
	for _, s := range cases {
		if got, want := validName(s), re.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}
