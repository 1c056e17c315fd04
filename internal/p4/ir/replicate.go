package ir

import "github.com/edgenf/edgenf/internal/p4/sema"

// replication reports whether the program replicates packets (a clone,
// resubmit or recirculate extern, or standard_metadata.mcast_grp: then it
// has clone sessions and multicast groups) and whether it recirculates.
func replication(info *sema.Info) (replicates, recirculates bool) {
	if info.Main != nil && info.Main.Arch == "psa" {
		return psaReplication(info) // replicate_psa.go
	}
	for _, cr := range info.Calls {
		if cr == nil || cr.Kind != sema.CallExternFunc {
			continue
		}
		switch cr.Method {
		case "clone", "clone3", "clone_preserving_field_list", "resubmit", "resubmit_preserving_field_list":
			replicates = true
		case "recirculate", "recirculate_preserving_field_list":
			replicates, recirculates = true, true
		}
	}
	return replicates || UsesField(info, "mcast_grp"), recirculates
}

// UsesField reports whether the program reads or writes a field named name
// (standard_metadata's: timestamps cost a clock read per packet, so they
// are filled only if used).
func UsesField(info *sema.Info, name string) bool {
	for m, r := range info.Members {
		if r.Kind == sema.FieldAccess && m.Name == name {
			return true
		}
	}
	return false
}
