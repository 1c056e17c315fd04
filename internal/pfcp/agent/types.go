package agent

import (
	"net/netip"
	"time"

	"github.com/edgenf/edgenf/internal/nf/upf/model"
)

// Datapath is what the agent needs of the UPF beyond its tables: usage
// accounting, buffered packets, tunnels, and the indexes of the sessions
// installed (which the controller keeps for the fast path anyway).
type Datapath interface {
	// Usage closes the current measurement of the session's URRs (all of
	// them when ids is nil) with the trigger given (pfcp.Usage*), and
	// returns it: a report is due (deletion, query, removal).
	Usage(seid uint64, ids []uint32, trigger uint32) []Usage
	// DropBuffered discards the session's buffered packets (DROBU).
	DropBuffered(seid uint64)
	// SendEndMarker sends a GTP-U End Marker into a tunnel that is being
	// switched away from.
	SendEndMarker(tunnel model.OuterHeader, port string)
	// TEIDInUse and UEAddrInUse report whether a session uses a local
	// TEID, or a UE address (an IPv6 address: its /64).
	TEIDInUse(teid uint32) bool
	UEAddrInUse(a netip.Addr) bool
	// SessionByCP finds the session an SMF knows by its F-SEID.
	SessionByCP(addr netip.Addr, seid uint64) (uint64, bool)
	// SessionsOf lists the sessions an SMF (its Node ID) controls.
	SessionsOf(node string) []uint64
	// HasSession reports whether a session exists.
	HasSession(seid uint64) bool
}

// Usage is one URR's measurement, for a usage report.
type Usage struct {
	URR     uint32
	SEQN    uint32
	Trigger uint32 // Usage Report Trigger bits (pfcp.Trigger*, pfcp.Usage*)
	Start   time.Time
	End     time.Time
	// Volume is measured when the URR measures volume.
	Volume *Volume
	// Duration (seconds) is measured when the URR measures duration.
	Duration *uint32
}

// Volume is a volume measurement: octets and packets per direction.
type Volume struct {
	ULBytes, DLBytes uint64
	ULPkts, DLPkts   uint64
}

// EventKind says what an Event reports.
type EventKind uint8

// Events the datapath reports to the SMF.
const (
	// EventUsage: usage reports are due (a threshold, quota or period).
	EventUsage EventKind = iota + 1
	// EventDownlinkData: a first downlink packet arrived for a FAR that
	// buffers and/or notifies (NOCP).
	EventDownlinkData
	// EventErrorIndication: a gNB or UPF answered a downlink packet with a
	// GTP-U Error Indication: it has no context for the tunnel.
	EventErrorIndication
)

// Event is something the UPF tells the SMF of a session in a Session
// Report Request.
type Event struct {
	Kind  EventKind
	SEID  uint64
	Usage []Usage
	// PDR and QFI of a downlink data report.
	PDR uint16
	QFI uint8
	// Tunnel is the remote F-TEID of an error indication.
	Tunnel model.OuterHeader
}
