package sema

import "github.com/edgenf/edgenf/internal/p4/syntax"

// wideOperator refuses the operators the back end does not compute on
// values wider than 64 bits (bit<128> IPv6 addresses are byte arrays there,
// backend/wide.go): multiplication, division, modulo and saturating
// arithmetic, and any arithmetic on int<N> that wide.
func (c *checker) wideOperator(pos syntax.Pos, op string, t *Bits) {
	switch op {
	case "==", "!=", "&", "|", "^":
		return
	case "+", "-", "<", ">", "<=", ">=", "<<", ">>":
		if !t.Signed {
			return
		}
		c.unsupported(pos, "operator "+op+" on int<N> wider than 64 bits (bit<N> is supported)")
		return
	}
	c.unsupported(pos, "operator "+op+" on values wider than 64 bits (+, -, &, |, ^, ~, shifts, comparisons, ++, casts and slices are supported)")
}
