// Package verifier tells how much of the kernel verifier's budget a
// program takes: the instructions it processed to load it (each path it
// walks counts, so a program can be far shorter than its count). A load
// fails past Limit; tests that bound a program's count find out before a
// feature takes it there.
package verifier

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/testenv"
)

// Limit is the verifier's bound on the instructions it processes for one
// program (BPF_COMPLEXITY_LIMIT_INSNS).
const Limit = 1_000_000

var processed = regexp.MustCompile(`processed (\d+) insns`)

// Processed loads program prog of spec on its own (its maps created
// fresh, not pinned) and returns how many instructions the verifier
// processed. It skips t unless it runs as root.
func Processed(t testing.TB, spec *ebpf.CollectionSpec, prog string) int {
	t.Helper()
	testenv.NeedRoot(t)
	n, err := processedBy(spec, prog)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func processedBy(spec *ebpf.CollectionSpec, prog string) (int, error) {
	s := spec.Copy()
	for name, ms := range s.Maps {
		if !strings.HasPrefix(name, ".") {
			ms.Pinning = ebpf.PinNone
		}
	}
	for n := range s.Programs {
		if n != prog {
			delete(s.Programs, n)
		}
	}
	if s.Programs[prog] == nil {
		return 0, fmt.Errorf("the object has no program %s", prog)
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", prog, err)
	}
	log := coll.Programs[prog].VerifierLog
	coll.Close()
	m := processed.FindStringSubmatch(log)
	if m == nil {
		return 0, fmt.Errorf("%s: no instruction count in the verifier's statistics:\n%s", prog, log)
	}
	return strconv.Atoi(m[1])
}
