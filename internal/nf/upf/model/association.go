package model

import (
	"net/netip"

	"github.com/edgenf/edgenf/internal/cube"
)

// MaxAssociations bounds the SMFs one UPF is associated with.
const MaxAssociations = 256

// Association is a PFCP association with an SMF, kept across daemon
// restarts so that its sessions stay under its control.
type Association struct {
	// Node is the SMF's Node ID (FQDN or address).
	Node string `json:"node" minLength:"1"`
	// Address is where the SMF's PFCP messages come from.
	Address string `json:"address" format:"addr-port"`
	// RecoveryTime is the SMF's Recovery Time Stamp (RFC 3339): a new one
	// means the SMF restarted and lost its sessions.
	RecoveryTime string `json:"recovery_time" format:"rfc3339"`
	// Features are the SMF's CP Function Features (octets as an integer).
	Features uint32 `json:"cp_features,omitempty"`
	// Since is when the association was set up.
	Since string `json:"since" format:"rfc3339"`
}

// Validate checks an association.
func (a *Association) Validate(*cube.Cube) error {
	if a.Node == "" {
		return cube.Errorf("node", "required: the SMF's Node ID")
	}
	if _, err := netip.ParseAddrPort(a.Address); err != nil {
		return cube.Errorf("address", "invalid address:port %q", a.Address)
	}
	for _, t := range []struct{ field, v string }{{"recovery_time", a.RecoveryTime}, {"since", a.Since}} {
		if err := checkTime(t.field, t.v); err != nil {
			return err
		}
	}
	return nil
}
