package capture

import (
	"context"
	"testing"

	"github.com/edgenf/edgenf/internal/nftest"
	"golang.org/x/net/bpf"
)

// Steps agrees with golang.org/x/net/bpf's interpreter on whether a frame
// matches, and counts the instructions a match and a miss run.
func TestStepsAgreesWithTheVM(t *testing.T) {
	udp := nftest.UDP4("198.18.0.1", "198.18.0.2", 3000, 53, []byte("q"))
	tcp := nftest.TCP4("198.18.0.1", "198.18.0.2", 40000, 80)
	for _, c := range []struct {
		expr               string
		minSteps, maxSteps int
	}{
		{"udp port 53", 6, 20},
		{"tcp", 2, 8},
		{"net 198.18.0.0/16 and not tcp", 3, 12},
		{"vlan 10 and udp", 2, 30},
	} {
		prog, err := Compile(context.Background(), c.expr)
		if err != nil {
			t.Skipf("%v", err) // no tcpdump
		}
		insns, ok := bpf.Disassemble(prog)
		if !ok {
			t.Fatalf("%s: cannot disassemble", c.expr)
		}
		vm, err := bpf.NewVM(insns)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range [][]byte{udp, tcp} {
			steps, match := Steps(prog, f)
			n, _ := vm.Run(f)
			if match != (n > 0) {
				t.Errorf("%s: Steps says match %v, the VM %d", c.expr, match, n)
			}
			if steps < 1 || steps > len(prog) {
				t.Errorf("%s: %d steps in a program of %d", c.expr, steps, len(prog))
			}
		}
		if steps, _ := Steps(prog, udp); steps < c.minSteps || steps > c.maxSteps {
			t.Errorf("%s: %d steps on a UDP frame, want %d..%d", c.expr, steps, c.minSteps, c.maxSteps)
		}
	}
}
