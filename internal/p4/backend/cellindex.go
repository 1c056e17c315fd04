package backend

import (
	"fmt"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// cellIndex is the C __u32 index of a register, counter or meter cell
// from index expression e, of any width: a value that does not fit in 32
// bits becomes 0xffffffff, out of range for every array (sizes are at most
// 2^20), never a smaller index its low bits would make. PSA lets the index
// type be as wide as the program likes (Meter<bit<128>>: an IPv6 address
// as the index).
func (g *gen) cellIndex(e syntax.Expr) string {
	t := g.typeOf(e)
	w := width(t)
	if !isWide(t) {
		if w > 32 {
			return fmt.Sprintf("({ __u64 ix = %s; ix >> 32 ? 0xffffffffU : (__u32)ix; })", g.rv(e))
		}
		return "(__u32)" + g.rv(e)
	}
	n := (w + 7) / 8
	var hi []string
	for off := 0; off < n-8; off += 8 {
		hi = append(hi, fmt.Sprintf("p4_ldbe(ix + %d, %d)", off, min(8, n-8-off)))
	}
	return fmt.Sprintf("({ const __u8 *ix = %s; __u64 lo = p4_ldbe(ix + %d, 8); (%s || lo >> 32) ? 0xffffffffU : (__u32)lo; })",
		g.wref(e), n-8, strings.Join(hi, " || "))
}
