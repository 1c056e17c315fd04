package stf

import (
	"strings"
	"testing"
)

// BMv2's meter commands: rates per microsecond become units per second.
func TestParseMeterRates(t *testing.T) {
	cmds, err := Parse("x.stf", "meter_set_rates cIngress.meter0 2 0.000005:4 0.00002:5\nmeter_array_set_rates m 0.000006:7 0.00008:9\nmeter_get_rates m 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if c := cmds[0]; c.Kind != "meter_set" || c.Meter != "cIngress.meter0" || c.Index != 2 || c.AllCells || c.Rates != [4]uint64{5, 4, 20, 5} {
		t.Errorf("meter_set_rates: %+v", c)
	}
	if c := cmds[1]; c.Kind != "meter_set" || !c.AllCells || c.Rates != [4]uint64{6, 7, 80, 9} {
		t.Errorf("meter_array_set_rates: %+v", c)
	}
	if c := cmds[2]; c.Kind != "meter_get" || c.Meter != "m" || c.Index != 1 {
		t.Errorf("meter_get_rates: %+v", c)
	}
	for bad, want := range map[string]string{
		"meter_set_rates m 2 0.0000005:4 1:5": "x.stf:1: meter rate 0.0000005 units/µs is 0.500 units/s: edgenf meters take a whole number",
		"meter_set_rates m 2 1:4":             "meter_set_rates <meter> <index> <cir>:<cburst> <pir>:<pburst>",
		"meter_set_rates m 2 1 2":             `bad meter rate "1": want <rate>:<burst>`,
		"meter_set_rates m x 1:1 2:2":         `bad meter index "x"`,
		"meter_array_set_rates m -1:1 2:2":    `bad meter rate "-1"`,
		"meter_array_set_rates m 1:z 2:2":     `bad meter burst "z"`,
		"meter_get_rates m":                   "meter_get_rates <meter> <index>",
	} {
		if _, err := Parse("x.stf", bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
}
