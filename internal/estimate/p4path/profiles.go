package p4path

import (
	"fmt"

	"github.com/edgenf/edgenf/internal/p4/ir"
)

// Tables implemented by an action profile or selector hold references,
// not actions: a hit resolves its reference in the profile's maps before
// the member's action runs (ir.ActionProfile has the layouts). What that
// costs comes from the compiled program: the selector's hash algorithm
// over the width of its declared selector keys, and one lookup in the
// member map, after one in the group map for a group. The lookups are
// priced by terms the calibration fits on a compiled action profile and
// selector, so their cost follows the datapath's map kinds and its member
// pick (hash maps or array slots, a division or a multiplication).
//
// A hit of a selector's table is priced as a group, the reason a selector
// is there (an entry naming one member directly costs less: its member
// lookup only); a hit of a plain action profile's table as a member.
func (w *walker) resolveReference(t *ir.Table, st *state, what string) {
	ap := t.Profile
	if ap == nil {
		return
	}
	if !ap.Selector {
		st.use(TermProfileMember, 1, what+": member of "+short(ap.Name))
		return
	}
	sel := fmt.Sprintf("%s: selector %s", what, short(ap.Name))
	switch ap.Algo {
	case "random":
		st.use(TermRandom, 1, sel+" random")
	case "csum16":
		st.use(TermCsum, 1, sel+" csum16")
		st.use(TermCsumByte, float64(selectorBytes(t)), sel+" csum16")
	default:
		w.hashUse(ap.Algo, selectorBytes(t), st, sel)
	}
	st.use(TermProfileGroup, 1, sel+" group")
	st.use(TermProfileMember, 1, sel+" member")
}

// selectorBytes is the size of a table's selector keys packed as a field
// list (as the generated code hashes them: the fields' bits end to end).
func selectorBytes(t *ir.Table) int {
	bits := 0
	for _, k := range t.SelectorKeys {
		bits += k.Width
	}
	return (bits + 7) / 8
}
