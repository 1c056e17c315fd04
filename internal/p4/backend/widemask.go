package backend

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/sema"
	"github.com/edgenf/edgenf/internal/p4/syntax"
)

// wideMaskCond renders the match of a key wider than 64 bits against a
// constant value &&& mask (const entries, select cases): the key's bytes
// compared 8 at a time with the masked value. A mask or value that is not
// a compile-time constant is unsupported.
func (g *gen) wideMaskCond(x *syntax.Mask, k syntax.Expr, kt sema.Type) string {
	m, okm := g.info.Consts[x.Mask]
	v, okv := g.info.Consts[x.Value]
	if !okm || !okv {
		g.unsupported(x.Pos, "masks on keys wider than 64 bits that are not compile-time constants")
		return "0"
	}
	nb := (width(kt) + 7) / 8
	mb, vb := make([]byte, nb), make([]byte, nb)
	if m.Sign() < 0 || v.Sign() < 0 || m.BitLen() > 8*nb || v.BitLen() > 8*nb {
		g.errorf(x.Pos, "value or mask does not fit the key's %d bits", width(kt))
		return "0"
	}
	m.FillBytes(mb)
	new(big.Int).And(v, m).FillBytes(vb)
	kp := g.wref(k)
	var conds []string
	for o := 0; o < nb; o += 8 {
		n := min(8, nb-o)
		var mw, vw uint64
		for i := range n {
			mw = mw<<8 | uint64(mb[o+i])
			vw = vw<<8 | uint64(vb[o+i])
		}
		if mw == 0 {
			continue
		}
		conds = append(conds, fmt.Sprintf("(p4_ldbe(%s + %d, %d) & 0x%xULL) == 0x%xULL", kp, o, n, mw, vw))
	}
	if len(conds) == 0 {
		return "1"
	}
	return "(" + strings.Join(conds, " && ") + ")"
}
