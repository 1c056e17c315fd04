package agent_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/pfcp/client"
	"github.com/edgenf/edgenf/internal/tenant"
)

// BenchmarkPFCPEstablishment measures Session Establishments per second
// from one SMF, one request in flight and 64, into a UPF that already has
// many sessions, and the memory a session costs. With
// EDGENF_PFCP_BENCH_OUT set, it writes the results as a Markdown section
// of the performance report (make bench).
func BenchmarkPFCPEstablishment(b *testing.B) {
	quick := os.Getenv("EDGENF_BENCH_QUICK") != ""
	n := 20000
	if quick {
		n = 4000
	}
	e := nftest.Engine(b)
	port := nftest.FreeUDPPort(b)
	nftest.MustUpdate(b, e, func(topo *cube.Topology) error {
		topo.Put(upfCube(port, ""))
		return nil
	})
	c, err := client.Dial(netip.MustParseAddrPort("127.0.0.1:0"), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Associate(); err != nil {
		b.Fatal(err)
	}
	mem0 := memlock("u1")
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	serial := establish(b, c, 0, n/4, 1)
	windowed := establish(b, c, n/4, n, 64)
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	total := n/4 + n
	kernel := float64(memlock("u1")-mem0) / float64(total)
	heap := float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / float64(total)
	state := stateSize(e.Entries(tenant.Admin, "u1", "sessions"))
	r1 := float64(n/4) / serial.Seconds()
	r64 := float64(n) / windowed.Seconds()
	b.ReportMetric(r1, "estab/s-window1")
	b.ReportMetric(r64, "estab/s-window64")
	if out := os.Getenv("EDGENF_PFCP_BENCH_OUT"); out != "" {
		var s strings.Builder
		fmt.Fprintf(&s, "## UPF: PFCP session establishments\n\n")
		fmt.Fprintf(&s, "One SMF on loopback establishing sessions like those of the e2e tests (an uplink PDR on a tunnel the UPF\n"+
			"chooses, a downlink PDR on a UE address it allocates, two FARs, a QER, a URR), each acknowledged only once\n"+
			"installed in the kernel and written to the state journal. `go test -bench PFCPEstablishment ./internal/pfcp/agent`.\n\n")
		fmt.Fprintf(&s, "| requests in flight | sessions | establishments/s |\n|---|---|---|\n")
		fmt.Fprintf(&s, "| 1 | %d | %.0f |\n| 64 | %d | %.0f |\n\n", n/4, r1, n, r64)
		fmt.Fprintf(&s, "Memory per session (%d sessions): %.0f B of kernel maps (BPF memlock beyond the cube's preallocated\n"+
			"tables), %.0f B of daemon heap, %.0f B of state file.\n\n", total, kernel, heap, state)
		if err := os.WriteFile(out, []byte(s.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// memlock sums the BPF memlock of the maps whose names start with upf_
// (the kernel's account of what they hold).
func memlock(string) int64 {
	ents, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil || !strings.Contains(string(b), "map_type:") {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			var v int64
			if _, err := fmt.Sscanf(line, "memlock:\t%d", &v); err == nil {
				total += v
			}
		}
	}
	return total
}

func stateSize(rows []json.RawMessage) float64 {
	if len(rows) == 0 {
		return 0
	}
	t := 0
	for _, r := range rows {
		t += len(r)
	}
	return float64(t) / float64(len(rows))
}
