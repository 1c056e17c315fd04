package stf

import (
	"strings"
	"testing"
)

// TestRuntPastEnd: a frame shorter than 14 bytes whose parser reads past
// its end is a positioned error at both hooks, not the padding's zeros
// passed off as packet bytes (testdata/runt.stf covers frames the parser
// stays within).
func TestRuntPastEnd(t *testing.T) {
	res := compileFile(t, "../testdata/conformance.p4") // extracts an Ethernet header and a byte
	for _, hook := range []string{"xdp", "tc"} {
		r := load(t, res, hook)
		cmds, err := Parse("runt.stf", "packet 0 000000000002\nexpect 1 000000000002\n")
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run("runt.stf", cmds)
		if err == nil || !strings.Contains(err.Error(), "runt.stf:1: the parser read 15 bytes of this 6-byte frame") {
			t.Errorf("%s: %v", hook, err)
		}
	}
}
