package datapath_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/vishvananda/netlink"
)

// BenchmarkAttach reports what putting the framework's program on one more
// interface costs: 20 veths at each hook, each attached with a hop to an
// interface (the stub) or into one portfwd cube (its direct entry); wall
// and CPU (the process's, the verifier's included) per interface, and the
// wall time to detach them. Wall time is mostly the kernel's RCU grace
// periods; CPU time is what loading programs costs.
func BenchmarkAttach(b *testing.B) {
	const n = 20
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		for _, direct := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/direct=%v", hook, direct), func(b *testing.B) {
				dp, _, lab := ifaceLab(b)
				var c *datapath.Program
				hop := datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}
				if direct {
					var err error
					if c, err = dp.LoadCube("c0", hook, 0, pfSpec(b, hook), nil); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(c.Close)
					hop = datapath.Hop{Kind: datapath.DstCube, Slot: 0, Port: 0}
				}
				names, idx := make([]string, n), make([]int, n)
				for i := range n {
					na, _, err := lab.RootVeth(fmt.Sprintf("t%da", i), fmt.Sprintf("t%db", i))
					if err != nil {
						b.Fatal(err)
					}
					l, err := netlink.LinkByName(na)
					if err != nil {
						b.Fatal(err)
					}
					names[i], idx[i] = na, l.Attrs().Index
				}
				cpu := func() time.Duration {
					var ru syscall.Rusage
					syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
					return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
				}
				c0 := cpu()
				t0 := time.Now()
				for i := range n {
					if _, err := dp.AttachStub(names[i], idx[i], hook, datapath.Ingress, hop, c); err != nil {
						b.Fatal(err)
					}
				}
				attach := time.Since(t0)
				b.ReportMetric(float64((cpu()-c0).Microseconds())/1000/n, "attach-cpu-ms/iface")
				t0 = time.Now()
				for i := range n {
					if err := dp.DetachStub(names[i], hook, datapath.Ingress); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(attach.Microseconds())/1000/n, "attach-ms/iface")
				b.ReportMetric(float64(time.Since(t0).Microseconds())/1000/n, "detach-ms/iface")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
