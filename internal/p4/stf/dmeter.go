package stf

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// parseDirectMeterSet reads
// direct_meter_set <table> [<priority>] <field>:<value> ... <cir> <cburst> <pir> <pburst>.
func parseDirectMeterSet(c *Cmd, f []string) error {
	const usage = "direct_meter_set <table> [<priority>] <field>:<value> ... <cir> <cburst> <pir> <pburst>"
	if len(f) < 6 {
		return fmt.Errorf(usage)
	}
	c.Table = f[1]
	rest := f[2 : len(f)-4]
	if len(rest) > 0 && !strings.Contains(rest[0], ":") {
		n, err := strconv.Atoi(rest[0])
		if err != nil {
			return fmt.Errorf("bad priority %q (%s)", rest[0], usage)
		}
		c.Priority = n
		rest = rest[1:]
	}
	for _, m := range rest {
		i := strings.IndexByte(m, ':')
		if i <= 0 {
			return fmt.Errorf("bad match %q (want field:value)", m)
		}
		c.Matches = append(c.Matches, p4info.Match{Field: m[:i], Value: m[i+1:]})
	}
	for i := range c.Rates {
		v, err := strconv.ParseUint(f[len(f)-4+i], 0, 64)
		if err != nil {
			return fmt.Errorf("bad meter rate or burst %q", f[len(f)-4+i])
		}
		c.Rates[i] = v
	}
	return nil
}
