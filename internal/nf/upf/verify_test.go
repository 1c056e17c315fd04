package upf

import (
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/testenv/verifier"
)

// maxVerified: a upf program whose load takes the verifier past 80% of its
// limit fails here, so that the next feature learns it needs its own
// budget before its program fails to load. At TC the apply step is a
// global function, verified once (upf.bpf.c: upf_apply_tc); inlined it was
// verified once per kind of list pointer, and TC reached 875,221 with
// chosen TEIDs' slots, and over the limit with UE pools too.
const maxVerified = verifier.Limit * 8 / 10

// Both programs of each hook: the panel's and the direct entry, which adds
// the start of an interface's hop (cube.h).
func TestVerifierBudget(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			obj, err := Type.Object(hook)
			if err != nil {
				t.Fatal(err)
			}
			// A cube of the default size (max_sessions).
			spec, err := Type.SpecOf(&cube.Cube{Name: "u", Type: "upf", Hook: hook}, obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, prog := range []string{datapath.ProgName, datapath.EntryName} {
				n := verifier.Processed(t, spec, prog)
				t.Logf("%s %s: %d instructions processed by the verifier (%.0f%% of its limit)", hook, prog, n, float64(n)*100/verifier.Limit)
				if n > maxVerified {
					t.Errorf("%s %s: the verifier processed %d instructions to load the upf, want at most %d (80%% of its limit %d): "+
						"a new kind of list pointer or key inlined into the match and apply steps?", hook, prog, n, maxVerified, verifier.Limit)
				}
			}
		})
	}
}
