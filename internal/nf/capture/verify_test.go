package capture

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/testenv"
)

// maxVerified bounds the instructions the verifier walks for the capture
// program. Its filter machine once lived on the stack, where the verifier
// tracks each value: every step of the loop was a new state, 86,000
// instructions at XDP and 262,000 at TC, seconds per load and twice that
// for a capture on an interface (the cube and its direct entry). In the
// scratch map it is verified in one pass: about 3,000 and 8,000.
const maxVerified = 30000

var processed = regexp.MustCompile(`processed (\d+) insns`)

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
		for name, ms := range spec.Maps {
			if !strings.HasPrefix(name, ".") {
				ms.Pinning = ebpf.PinNone
			}
		}
		for _, prog := range []string{datapath.ProgName, datapath.EntryName} {
			s := spec.Copy()
			for n := range s.Programs {
				if n != prog {
					delete(s.Programs, n)
				}
			}
			coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
			if err != nil {
				t.Fatalf("%s %s: %v", hook, prog, err)
			}
			log := coll.Programs[prog].VerifierLog
			coll.Close()
			m := processed.FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("%s %s: no instruction count in the verifier's statistics:\n%s", hook, prog, log)
			}
			n, _ := strconv.Atoi(m[1])
			if n > maxVerified {
				t.Errorf("%s %s: the verifier walked %d instructions, want at most %d (is the filter machine back on the stack?)", hook, prog, n, maxVerified)
			}
			t.Logf("%s %s: %d instructions verified", hook, prog, n)
		}
	}
}
