package ir

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
)

// psaReplication reports whether a PSA program replicates packets: it
// writes or reads ostd.multicast_group, ostd.clone or ostd.resubmit (the
// ingress's) or ostd.clone (the egress's), applies psa.p4's multicast
// action, or names PSA_PORT_RECIRCULATE (which recirculates). psa.p4's
// own actions (send_to_port clears multicast_group) are not the
// program's uses.
func psaReplication(info *sema.Info) (replicates, recirculates bool) {
	builtin := func(file string) bool { return file == "<psa.p4>" }
	for m, r := range info.Members {
		if r.Kind != sema.FieldAccess || builtin(m.Pos.File) {
			continue
		}
		st, ok := info.Types[m.X].(*sema.Struct)
		if !ok {
			continue
		}
		switch st.Name + "." + m.Name {
		case "psa_ingress_output_metadata_t.multicast_group", "psa_ingress_output_metadata_t.clone",
			"psa_ingress_output_metadata_t.resubmit", "psa_egress_output_metadata_t.clone":
			replicates = true
		}
	}
	for id, e := range info.Uses {
		if builtin(id.Pos.File) {
			continue
		}
		switch e := e.(type) {
		case *sema.Const:
			if e.Name == "PSA_PORT_RECIRCULATE" {
				replicates, recirculates = true, true
			}
		case *sema.Action:
			if e.Name == "multicast" && e.Decl != nil && builtin(e.Decl.Pos.File) {
				replicates = true
			}
		}
	}
	return replicates, recirculates
}
