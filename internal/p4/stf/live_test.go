package stf

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/p4"
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

// A live run knows a frame the program dropped as soon as the cube counts
// the drop, and a frame it sent as soon as it comes out: it waits the full
// liveWait only when the counters do not say (conformance runs were
// paced at liveWait per dropped frame).
func TestLiveRunDoesNotWaitOutADrop(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("namespaces and veths: the long tier")
	}
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			res, err := p4.Compile(context.Background(), p4test.File(t, "../../../examples/p4/acl.p4"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := LoadLive(res, hook, []int{0, 1})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmds, err := Parse("deny.stf", "add AclIngress.acl 15 hdr.ipv4.srcAddr:0xc6120000&&&0xffff0000 hdr.ipv4.dstAddr:* hdr.ipv4.protocol:6&&&0xff meta.dport:22->22 AclIngress.deny()\n")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Run("deny.stf", cmds); err != nil {
				t.Fatal(err)
			}
			ssh, _ := hex.DecodeString("000000000002000000000001080045000020000040004006aeb0c6120001c613000104d200160000000011223344")
			web, _ := hex.DecodeString("000000000002000000000001080045000020000040004006aeb0c6120001c613000104d21f900000000011223344")
			const n = 5
			start := time.Now()
			for range n {
				if out, err := r.Send(0, ssh); err != nil || out != nil {
					t.Fatalf("a denied frame: %v %v, want dropped", out, err)
				}
				if out, err := r.Send(0, web); err != nil || out == nil || out.Port != 1 {
					t.Fatalf("an allowed frame: %v %v, want it out of port 1", out, err)
				}
			}
			if took := time.Since(start); took > n*liveWait/2 {
				t.Errorf("%d drops and %d frames sent took %v: a drop is waited out (%v each)", n, n, took, liveWait)
			}
		})
	}
}
