package api

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// BenchmarkScrape: one scrape of /metrics by the administrator, with N
// two-port cubes, plain and gzipped (as Prometheus asks). make bench
// measures it at 10,000 cubes through the daemon, with the API's latency
// during scrapes.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("cubes=%d", n), func(b *testing.B) {
			eng := nftest.Engine(b)
			nftest.MustUpdate(b, eng, func(tp *cube.Topology) error {
				for i := range n {
					c := &cube.Cube{Name: fmt.Sprintf("c%d", i), Type: "portfwd", Hook: datapath.XDP, Tenant: fmt.Sprintf("t%d", i%10),
						Ports: []cube.Port{{Name: "p0", Index: 0}, {Name: "p1", Index: 1}}}
					if err := tp.AddCube(c); err != nil {
						return err
					}
				}
				return nil
			})
			h := New(eng, nil).Unix()
			for _, enc := range []string{"identity", "gzip"} {
				b.Run("encoding="+enc, func(b *testing.B) {
					size := 0
					for b.Loop() {
						req := httptest.NewRequest("GET", "/metrics", nil)
						req.Header.Set("Accept-Encoding", enc)
						w := httptest.NewRecorder()
						h.ServeHTTP(w, req)
						if w.Code != 200 {
							b.Fatalf("HTTP %d: %s", w.Code, w.Body)
						}
						size = w.Body.Len()
					}
					b.ReportMetric(float64(size), "bytes")
				})
			}
		})
	}
}
