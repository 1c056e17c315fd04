package stf

import (
	"context"
	"testing"

	"github.com/edgenf/edgenf/internal/p4/p4test"
)

// The shipped examples pass their STF tests through real veths too: the
// program runs as a cube, frames cross the kernel's XDP and TC paths.
func TestExamplesSTFLive(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("namespaces and veths: the long tier")
	}
	for _, hook := range []string{"xdp", "tc"} {
		for _, name := range []string{"portfwd", "l2switch", "l3router", "acl", "upf"} {
			t.Run(hook+"/"+name, func(t *testing.T) {
				res, err := RunFileMode(context.Background(), p4test.File(t, "../../../examples/p4/"+name+".p4"),
					"../../../examples/p4/"+name+".stf", hook, true)
				if err != nil {
					t.Fatal(err)
				}
				if !res.OK() {
					t.Fatalf("live run failed:\n%s", res.Error())
				}
			})
		}
	}
}
