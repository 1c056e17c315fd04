// Package rate reads and writes bit rates the way tc does (100mbit,
// 1.5gbit): shared by the slicer NF and the CLI, which must not link the
// NF's eBPF objects.
package rate

import (
	"fmt"
	"strconv"
	"strings"
)

// Bits formats a rate in bits/s the way tc does.
func Bits(bps uint64) string {
	switch {
	case bps >= 1e9 && bps%1e6 == 0:
		return strconv.FormatFloat(float64(bps)/1e9, 'f', -1, 64) + "Gbit/s"
	case bps >= 1e6 && bps%1e3 == 0:
		return strconv.FormatFloat(float64(bps)/1e6, 'f', -1, 64) + "Mbit/s"
	case bps >= 1e3:
		return strconv.FormatFloat(float64(bps)/1e3, 'f', -1, 64) + "kbit/s"
	}
	return strconv.FormatUint(bps, 10) + "bit/s"
}

// Parse reads a rate as tc writes it: 100mbit, 1.5gbit, 800kbit, 64000
// (bits/s), with an optional "/s".
func Parse(s string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "/s")
	t = strings.TrimSuffix(t, "bit")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, t[:len(t)-1]
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*mult > 1e15 {
		return 0, fmt.Errorf("%q is not a rate (100mbit, 1.5gbit, 800kbit, or bits/s)", s)
	}
	return uint64(f * mult), nil
}
