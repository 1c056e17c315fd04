package rate

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]uint64{"100mbit": 100e6, "1.5Gbit": 1.5e9, "800kbit/s": 800e3, "64000": 64000} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := Parse("fast"); err == nil {
		t.Error("Parse(fast) accepted")
	}
}

func TestBits(t *testing.T) {
	for in, want := range map[uint64]string{100e6: "100Mbit/s", 1.5e9: "1.5Gbit/s", 8000: "8kbit/s", 999: "999bit/s"} {
		if got := Bits(in); got != want {
			t.Errorf("Bits(%d) = %s, want %s", in, got, want)
		}
	}
}
