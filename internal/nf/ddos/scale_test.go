package ddos

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// TestEngineLargeBlacklist measures what a large blacklist costs the control
// plane through a real engine: loading N entries in one change, then adding
// and removing one. A measurement: EDGENF_BENCH_ENTRIES=N (e.g. 1048576).
func TestEngineLargeBlacklist(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("EDGENF_BENCH_ENTRIES"))
	if n == 0 {
		t.Skip("measurement: set EDGENF_BENCH_ENTRIES")
	}
	e := nftest.Engine(t)
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos", Hook: datapath.XDP})
	})
	start := time.Now()
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		c, _ := tp.Cube("dd")
		rows := make(map[string]json.RawMessage, n)
		for i := 0; i < n; i++ {
			p := netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff)).String()
			rows[p] = json.RawMessage(`{"prefix":"` + p + `"}`)
		}
		c.Tables = map[string]map[string]json.RawMessage{"blacklist_src": rows}
		return nil
	})
	t.Logf("%d entries loaded in one change: %v", n, time.Since(start))
	start = time.Now()
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
		_, err := tp.PutEntry("dd", "blacklist_src", json.RawMessage(`{"prefix":"198.18.0.1"}`))
		return err
	})
	t.Logf("one more entry: %v", time.Since(start))
	start = time.Now()
	nftest.MustUpdate(t, e, func(tp *cube.Topology) error { return tp.DeleteEntry("dd", "blacklist_src", "198.18.0.1/32") })
	t.Logf("delete one: %v", time.Since(start))
}
