package engine_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/ddos"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/tenant"
)

// tenantChain is one tenant's two-cube chain, as the scale scenarios build it.
func tenantChain(i int) []*cube.Cube {
	a, b := fmt.Sprintf("t%da", i), fmt.Sprintf("t%db", i)
	rules := map[string]map[string]json.RawMessage{"rules": {
		"p0": json.RawMessage(`{"in_port":"p0","out_port":"p1"}`),
		"p1": json.RawMessage(`{"in_port":"p1","out_port":"p0"}`),
	}}
	return []*cube.Cube{
		{Name: a, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1, Peer: b + ":p0"}}, Tables: rules},
		{Name: b, Type: "portfwd", Ports: []cube.Port{{Name: "p0", Index: 0, Peer: a + ":p1"}, {Name: "p1", Index: 1}}, Tables: rules},
	}
}

// BenchmarkChange reports what one change (a new two-cube tenant chain)
// costs when the topology already holds N cubes: it should grow far slower
// than N (changed cubes are validated, synced and encoded; the rest only
// compared).
func BenchmarkChange(b *testing.B) {
	for _, n := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprintf("cubes=%d", n), func(b *testing.B) {
			e := nftest.Engine(b)
			add := func(i int) {
				nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
					for _, c := range tenantChain(i) {
						tp.Cubes[c.Name] = c
					}
					return nil
				})
			}
			for i := 0; i < n/2; i++ {
				add(i)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				add(n/2 + i)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/change")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkEntryChange reports what adding one table entry costs when the
// cube already has N entries, through ChangeEntries (the API's path: it
// should not grow with N) and through a whole-topology Update.
func BenchmarkEntryChange(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		for _, path := range []string{"entries", "update"} {
			b.Run(fmt.Sprintf("entries=%d/%s", n, path), func(b *testing.B) {
				e := nftest.Engine(b)
				nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
					c := &cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{"blacklist_src": {}}}
					for i := range n {
						p := fmt.Sprintf("198.%d.%d.%d/32", 18+i>>16, i>>8&0xff, i&0xff)
						c.Tables["blacklist_src"][p] = json.RawMessage(fmt.Sprintf(`{"prefix":%q}`, p))
					}
					return tp.AddCube(c)
				})
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					raw := json.RawMessage(fmt.Sprintf(`{"prefix":"2001:db8:ffff::%x/128"}`, i+1))
					if path == "update" {
						nftest.MustUpdate(b, e, func(tp *cube.Topology) error {
							_, err := tp.PutEntry("dd", "blacklist_src", raw)
							return err
						})
						continue
					}
					if err := e.ChangeEntries(tenant.Admin, "dd", "blacklist_src", func(tx *engine.EntryTx) error {
						_, err := tx.Put(raw)
						return err
					}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/change")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
