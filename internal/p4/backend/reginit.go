package backend

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
)

// PSA's Register(size, initial_value): a cell holds its value XOR the
// initial value (ir.Register.Init), so the zeroed map reads the initial
// value in every cell from the first packet on. Without one (v1model, or
// 0) the code is the plain read and write.

// regDecode is the value of register r held in cell (a C l-value).
func regDecode(r *ir.Register, cell string) string {
	if r.Init == 0 {
		return fmt.Sprintf("(%s & %s)", cell, mask(r.Width))
	}
	return fmt.Sprintf("((%s ^ %#xULL) & %s)", cell, r.Init, mask(r.Width))
}

// regEncode is what a cell of r holds for the value v (masked to r's width).
func regEncode(r *ir.Register, v string) string {
	if r.Init == 0 {
		return v
	}
	return fmt.Sprintf("((%s) ^ %#xULL)", v, r.Init)
}

// regInit is the value of a cell never written (also an index out of
// range reads it).
func regInit(r *ir.Register) string { return fmt.Sprintf("%#xULL", r.Init) }
