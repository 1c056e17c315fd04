package ddos

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/estimate"
)

// The DDoS mitigator's cost model: a packet it lets through has been looked
// up in both blacklists, one probe per prefix length in use (IPv4 entries
// live in an open-addressing table probed per length, longest first), and
// counted by the rate and scan detectors when they are on.
const (
	termPass   = "ddos.pass"
	termLength = "ddos.prefix_length"
	termDetect = "ddos.detect"
)

func init() {
	estimate.Register(&estimate.Model{Type: "ddos",
		Terms: []estimate.Term{
			{Name: termPass, Doc: "a packet let through, blacklists empty, detection off"},
			{Name: termLength, Doc: "per IPv4 prefix length in use in a blacklist (a probe each)"},
			{Name: termDetect, Doc: "rate or port-scan detection on (per-source state updated)"},
		},
		Uses:  costUses,
		Cases: costCases,
	})
}

func costUses(_ *estimate.Profile, c *cube.Cube, _ string) ([]estimate.Use, []string, error) {
	var cfg Config
	if err := cube.DecodeInto("config", c.Config, &cfg); err != nil {
		return nil, nil, err
	}
	lengths := 0
	for _, t := range []string{"blacklist_src", "blacklist_dst"} {
		seen := map[int]bool{}
		for key := range c.Tables[t] {
			if l, ok := ipv4Length(key); ok {
				seen[l] = true
			}
		}
		lengths += len(seen)
	}
	uses := []estimate.Use{{Term: termPass, N: 1, What: "ddos: pass"}}
	if lengths > 0 {
		uses = append(uses, estimate.Use{Term: termLength, N: float64(lengths), What: fmt.Sprintf("ddos: %d prefix lengths probed", lengths)})
	}
	if cfg.Rate != nil || cfg.Scan != nil {
		uses = append(uses, estimate.Use{Term: termDetect, N: 1, What: "ddos: detection"})
	}
	return uses, []string{"a packet no blacklist holds (dropped ones cost less)"}, nil
}

// ipv4Length is the prefix length of an entry's key (its prefix, checked
// when the entry was written: an address alone is a /32), if IPv4. Read
// from the text, not parsed: an admission check (edgenfd -core-budget-ns)
// prices the cube at every change, and blacklists hold millions.
func ipv4Length(key string) (int, bool) {
	if strings.IndexByte(key, ':') >= 0 {
		return 0, false
	}
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return 32, true
	}
	l, err := strconv.Atoi(key[i+1:])
	return l, err == nil
}

// costCases: empty blacklists; 1,000 source addresses (one length); 1,000
// source prefixes of 8 lengths and as many destinations; rate detection.
func costCases(holdout bool) []estimate.Case {
	frame := estimate.Frame(estimate.FrameSpec{Src: "198.18.0.10", Dst: "198.18.1.1", Sport: 1234, Dport: 5678})
	mk := func(name string, cfg *Config, src, dst []string) estimate.Case {
		c := &cube.Cube{Name: "dd", Type: "ddos", Tables: map[string]map[string]json.RawMessage{}}
		if cfg != nil {
			c.Config = estimate.Row(cfg)
		}
		for t, list := range map[string][]string{"blacklist_src": src, "blacklist_dst": dst} {
			if len(list) == 0 {
				continue
			}
			c.Tables[t] = map[string]json.RawMessage{}
			for _, p := range list {
				c.Tables[t][p] = estimate.Row(Entry{Prefix: p})
			}
		}
		return estimate.Case{Name: name, Cube: c, Dir: datapath.Ingress, Frame: frame}
	}
	prefixes := func(n, lengths int) []string {
		var out []string
		for i := 0; i < n; i++ {
			l := 32 - 2*(i%lengths)
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i), 1}), l).Masked().String())
		}
		return out
	}
	if holdout {
		return []estimate.Case{
			mk("100 source addresses, 50 destination prefixes of 3 lengths", nil, prefixes(100, 1), prefixes(50, 3)),
			mk("port-scan detection", &Config{Scan: &ScanConfig{DistinctPorts: 1000}}, nil, nil),
			mk("rate detection, 1,000 source prefixes of 4 lengths", &Config{Rate: &RateConfig{Threshold: 1 << 30}}, prefixes(1000, 4), nil),
		}
	}
	return []estimate.Case{
		mk("empty blacklists", nil, nil, nil),
		mk("1,000 source addresses", nil, prefixes(1000, 1), nil),
		mk("1,000 source and 1,000 destination prefixes, 8 lengths each", nil, prefixes(1000, 8), prefixes(1000, 8)),
		mk("rate detection", &Config{Rate: &RateConfig{Threshold: 1 << 30}}, nil, nil),
	}
}
