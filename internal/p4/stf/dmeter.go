package stf

import (
	"fmt"
	"strconv"
	"strings"
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
		if err != nil || n < 0 || n >= maxPriority {
			return fmt.Errorf("bad priority %q (%s)", rest[0], usage)
		}
		c.Priority = n
		rest = rest[1:]
	}
	for _, m := range rest {
		mt, err := parseMatch(m)
		if err != nil {
			return err
		}
		c.Matches = append(c.Matches, mt)
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
