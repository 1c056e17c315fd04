package capture

import (
	"testing"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/edgenf/edgenf/internal/testenv/verifier"
)

// maxVerified bounds the instructions the verifier walks for the capture
// program. Its filter machine once lived on the stack, where the verifier
// tracks each value: every step of the loop was a new state, 86,000
// instructions at XDP and 262,000 at TC, seconds per load and twice that
// for a capture on an interface (the cube and its direct entry). In the
// scratch map it is verified in one pass: about 3,000 and 8,000.
const maxVerified = 30000

// The capture program and its direct entry verify in one pass over the
// filter step, at both hooks: starting a capture waits for that.
func TestFilterStepVerifiedOnce(t *testing.T) {
	testenv.NeedRoot(t)
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		obj, err := Type.Object(hook)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := datapath.LoadSpec(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, prog := range []string{datapath.ProgName, datapath.EntryName} {
			n := verifier.Processed(t, spec, prog)
			if n > maxVerified {
				t.Errorf("%s %s: the verifier walked %d instructions, want at most %d (is the filter machine back on the stack?)", hook, prog, n, maxVerified)
			}
			t.Logf("%s %s: %d instructions verified", hook, prog, n)
		}
	}
}
