package stf

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// BMv2's meter commands, as p4c's samples write them:
//
//	meter_set_rates <meter> <index> <cir>:<cburst> <pir>:<pburst>
//	meter_array_set_rates <meter> <cir>:<cburst> <pir>:<pburst>   (every cell)
//	meter_get_rates <meter> <index>                               (read only)
//
// Rates are in units (packets or bytes) per microsecond, as
// simple_switch_CLI takes them, and become edgenf's units per second;
// bursts are in units. They run as meter_set.

// parseMeterRates reads one of the three into c (Kind meter_set, or
// meter_get for the read).
func parseMeterRates(c *Cmd, f []string) error {
	usage := map[string]string{
		"meter_set_rates":       "meter_set_rates <meter> <index> <cir>:<cburst> <pir>:<pburst> (rates in units per microsecond)",
		"meter_array_set_rates": "meter_array_set_rates <meter> <cir>:<cburst> <pir>:<pburst> (rates in units per microsecond)",
		"meter_get_rates":       "meter_get_rates <meter> <index>",
	}[f[0]]
	want := map[string]int{"meter_set_rates": 5, "meter_array_set_rates": 4, "meter_get_rates": 3}[f[0]]
	if len(f) != want {
		return fmt.Errorf("%s", usage)
	}
	c.Meter = f[1]
	rates := f[2:]
	if f[0] != "meter_array_set_rates" {
		idx, err := strconv.ParseUint(f[2], 0, 32)
		if err != nil {
			return fmt.Errorf("bad meter index %q (%s)", f[2], usage)
		}
		c.Index = uint32(idx)
		rates = f[3:]
	}
	if f[0] == "meter_get_rates" {
		c.Kind = "meter_get"
		return nil
	}
	c.Kind = "meter_set"
	c.AllCells = f[0] == "meter_array_set_rates"
	for i, rb := range rates {
		r, b, ok := strings.Cut(rb, ":")
		if !ok {
			return fmt.Errorf("bad meter rate %q: want <rate>:<burst> (%s)", rb, usage)
		}
		perSec, err := perSecond(r)
		if err != nil {
			return err
		}
		burst, err := strconv.ParseUint(b, 0, 64)
		if err != nil {
			return fmt.Errorf("bad meter burst %q in %q", b, rb)
		}
		c.Rates[2*i], c.Rates[2*i+1] = perSec, burst
	}
	return nil
}

// perSecond turns a rate in units per microsecond (a decimal) into
// units per second, which must come out whole.
func perSecond(s string) (uint64, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("bad meter rate %q (units per microsecond)", s)
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	if !r.IsInt() || !r.Num().IsUint64() {
		return 0, fmt.Errorf("meter rate %s units/µs is %s units/s: edgenf meters take a whole number of units per second", s, r.FloatString(3))
	}
	return r.Num().Uint64(), nil
}
