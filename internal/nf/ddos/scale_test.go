package ddos

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
)

// TestEngineLargeBlacklist measures what a large blacklist costs the control
// plane through a real engine: loading N entries in one change, then adding
// and removing one; for IPv6 prefixes (tries) and IPv4 ones (the IPv4
// table). A measurement: EDGENF_BENCH_ENTRIES=N (e.g.
// 1048576).
func TestEngineLargeBlacklist(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("EDGENF_BENCH_ENTRIES"))
	if n == 0 {
		t.Skip("measurement: set EDGENF_BENCH_ENTRIES")
	}
	for _, fam := range []string{"ipv6", "ipv4"} {
		t.Run(fam, func(t *testing.T) {
			e := nftest.Engine(t)
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				return tp.AddCube(&cube.Cube{Name: "dd", Type: "ddos", Hook: datapath.XDP})
			})
			start := time.Now()
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error {
				c, _ := tp.Cube("dd")
				rows := make(map[string]json.RawMessage, n)
				for i := 0; i < n; i++ {
					s := fmt.Sprintf("2001:db8:%x:%x::/64", i>>16, i&0xffff)
					if fam == "ipv4" {
						// /24s of 240.0.0.0/4, and every 16th a /32 in it
						s = fmt.Sprintf("%d.%d.%d.0/24", 240+i>>16, i>>8&0xff, i&0xff)
						if i%16 == 15 {
							s = fmt.Sprintf("%d.%d.%d.7/32", 240+(i-1)>>16, (i-1)>>8&0xff, (i-1)&0xff)
						}
					}
					p := netip.MustParsePrefix(s).String()
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
			if fam == "ipv4" {
				// What did not fit in the table (expected: nothing).
				pin, _ := filepath.Glob(filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfe-%d-*", os.Getpid()), "cubes", "dd", "dd_src_lpm4"))
				if len(pin) == 1 {
					m, err := ebpf.LoadPinnedMap(pin[0], nil)
					if err != nil {
						t.Fatal(err)
					}
					var k lpm4Key
					var v entry4Val
					over := 0
					for it := m.Iterate(); it.Next(&k, &v); {
						over++
					}
					m.Close()
					t.Logf("IPv4 entries in the fallback trie: %d", over)
				}
			}
			start = time.Now()
			nftest.MustUpdate(t, e, func(tp *cube.Topology) error { return tp.DeleteEntry("dd", "blacklist_src", "198.18.0.1/32") })
			t.Logf("delete one: %v", time.Since(start))
		})
	}
}
