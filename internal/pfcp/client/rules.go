package client

import (
	"net/netip"

	"github.com/edgenf/edgenf/internal/pfcp"
)

// Builders of the rule IEs an SMF sends.

// PDR describes a Create PDR (or, with Update, an Update PDR).
type PDR struct {
	ID         uint16
	Precedence uint32
	// Access: an uplink PDR (source Access, GTP-U removed); else core.
	Access bool
	// TEID is the local F-TEID; ChooseTEID asks the UPF to choose one
	// (IPv4, and IPv6 with ChooseV6), shared by PDRs of the same ChooseID.
	TEID       uint32
	TEIDAddr   netip.Addr
	ChooseTEID bool
	ChooseV6   bool
	ChooseID   uint8
	// UE addresses, or a request to allocate them.
	UEIPv4, UEIPv6       netip.Addr
	ChooseUE4, ChooseUE6 bool
	NetworkInstance      string
	SDF                  []string
	QFI                  uint8
	FAR                  uint32
	QERs, URRs           []uint32
}

// IE encodes a Create PDR.
func (p PDR) IE() *pfcp.IE { return p.encode(pfcp.IECreatePDR) }

// UpdateIE encodes an Update PDR with everything p has.
func (p PDR) UpdateIE() *pfcp.IE { return p.encode(pfcp.IEUpdatePDR) }

func (p PDR) encode(t pfcp.IEType) *pfcp.IE {
	src := pfcp.InterfaceCore
	if p.Access {
		src = pfcp.InterfaceAccess
	}
	pdi := pfcp.Group(pfcp.IEPDI, pfcp.U8IE(pfcp.IESourceInterface, src))
	if p.NetworkInstance != "" {
		pdi.Children = append(pdi.Children, pfcp.NewIE(pfcp.IENetworkInstance, pfcp.EncodeAPN(p.NetworkInstance)))
	}
	switch {
	case p.ChooseTEID:
		f := pfcp.FTEID{Choose: true, ChooseV4: true, ChooseV6: p.ChooseV6, HasChooseID: p.ChooseID != 0, ChooseID: p.ChooseID}
		pdi.Children = append(pdi.Children, f.IE())
	case p.TEID != 0:
		f := pfcp.FTEID{TEID: p.TEID}
		if p.TEIDAddr.Is4() {
			f.IPv4 = p.TEIDAddr
		} else {
			f.IPv6 = p.TEIDAddr
		}
		pdi.Children = append(pdi.Children, f.IE())
	}
	if p.UEIPv4.IsValid() || p.UEIPv6.IsValid() || p.ChooseUE4 || p.ChooseUE6 {
		u := pfcp.UEIPAddress{IPv4: p.UEIPv4, IPv6: p.UEIPv6, ChooseV4: p.ChooseUE4, ChooseV6: p.ChooseUE6, Destination: !p.Access}
		if p.UEIPv6.IsValid() || p.ChooseUE6 {
			u.HasPrefixLen, u.PrefixLen = true, 64
		}
		pdi.Children = append(pdi.Children, u.IE())
	}
	for _, fd := range p.SDF {
		pdi.Children = append(pdi.Children, pfcp.SDFFilter{FlowDescription: fd}.IE())
	}
	if p.QFI != 0 {
		pdi.Children = append(pdi.Children, pfcp.U8IE(pfcp.IEQFI, p.QFI))
	}
	ie := pfcp.Group(t, pfcp.U16IE(pfcp.IEPDRID, p.ID), pfcp.U32IE(pfcp.IEPrecedence, p.Precedence), pdi)
	if p.Access || p.TEID != 0 || p.ChooseTEID {
		ie.Children = append(ie.Children, pfcp.U8IE(pfcp.IEOuterHeaderRemoval, pfcp.OHRGTPUUDPIPv4))
	}
	ie.Children = append(ie.Children, pfcp.U32IE(pfcp.IEFARID, p.FAR))
	for _, u := range p.URRs {
		ie.Children = append(ie.Children, pfcp.U32IE(pfcp.IEURRID, u))
	}
	for _, q := range p.QERs {
		ie.Children = append(ie.Children, pfcp.U32IE(pfcp.IEQERID, q))
	}
	return ie
}

// FAR describes a Create FAR (or an Update FAR).
type FAR struct {
	ID     uint32
	Action uint16 // pfcp.Action*
	// Dest is the destination interface (pfcp.Interface*); Tunnel, when
	// valid, the GTP-U peer (Outer Header Creation).
	Dest       uint8
	TunnelTEID uint32
	Tunnel     netip.Addr
	BAR        *uint8
	// SendEndMarker sets SNDEM in an Update FAR's forwarding parameters.
	SendEndMarker bool
	// Dup, with Action DUPL, is where the copies go (Duplicating
	// Parameters).
	Dup *Dup
}

// Dup is a FAR's duplicating destination: an interface (pfcp.Interface*)
// and, when valid, a GTP-U tunnel.
type Dup struct {
	Dest       uint8
	TunnelTEID uint32
	Tunnel     netip.Addr
}

// IE encodes a Create FAR.
func (f FAR) IE() *pfcp.IE {
	return f.encode(pfcp.IECreateFAR, pfcp.IEForwardingParameters, pfcp.IEDuplicatingParameters)
}

// UpdateIE encodes an Update FAR.
func (f FAR) UpdateIE() *pfcp.IE {
	return f.encode(pfcp.IEUpdateFAR, pfcp.IEUpdateForwardingParameters, pfcp.IEUpdateDuplicatingParameters)
}

func ohcIE(teid uint32, peer netip.Addr) *pfcp.IE {
	o := pfcp.OuterHeaderCreation{TEID: teid}
	if peer.Is4() {
		o.Desc, o.IPv4 = pfcp.OHCGTPUUDPIPv4, peer
	} else {
		o.Desc, o.IPv6 = pfcp.OHCGTPUUDPIPv6, peer
	}
	return o.IE()
}

func (f FAR) encode(t, fpt, dpt pfcp.IEType) *pfcp.IE {
	ie := pfcp.Group(t, pfcp.U32IE(pfcp.IEFARID, f.ID), pfcp.FlagsIE(pfcp.IEApplyAction, uint32(f.Action), 2))
	if f.Action&pfcp.ActionFORW != 0 || f.Tunnel.IsValid() {
		fp := pfcp.Group(fpt, pfcp.U8IE(pfcp.IEDestinationInterface, f.Dest))
		if f.Tunnel.IsValid() {
			fp.Children = append(fp.Children, ohcIE(f.TunnelTEID, f.Tunnel))
		}
		if f.SendEndMarker {
			fp.Children = append(fp.Children, pfcp.U8IE(pfcp.IEPFCPSMReqFlags, 0x02))
		}
		ie.Children = append(ie.Children, fp)
	}
	if d := f.Dup; d != nil {
		dp := pfcp.Group(dpt, pfcp.U8IE(pfcp.IEDestinationInterface, d.Dest))
		if d.Tunnel.IsValid() {
			dp.Children = append(dp.Children, ohcIE(d.TunnelTEID, d.Tunnel))
		}
		ie.Children = append(ie.Children, dp)
	}
	if f.BAR != nil {
		ie.Children = append(ie.Children, pfcp.U8IE(pfcp.IEBARID, *f.BAR))
	}
	return ie
}

// QER describes a Create QER (or an Update QER).
type QER struct {
	ID           uint32
	ULClosed     bool
	DLClosed     bool
	MBRUL, MBRDL uint64 // kbit/s
	QFI          uint8
}

// IE encodes a Create QER.
func (q QER) IE() *pfcp.IE { return q.encode(pfcp.IECreateQER) }

// UpdateIE encodes an Update QER.
func (q QER) UpdateIE() *pfcp.IE { return q.encode(pfcp.IEUpdateQER) }

func (q QER) encode(t pfcp.IEType) *pfcp.IE {
	var gate uint8
	if q.ULClosed {
		gate |= 1 << 2
	}
	if q.DLClosed {
		gate |= 1
	}
	ie := pfcp.Group(t, pfcp.U32IE(pfcp.IEQERID, q.ID), pfcp.U8IE(pfcp.IEGateStatus, gate))
	if q.MBRUL != 0 || q.MBRDL != 0 {
		ie.Children = append(ie.Children, pfcp.BitRate{Uplink: q.MBRUL, Downlink: q.MBRDL}.IE(pfcp.IEMBR))
	}
	if q.QFI != 0 {
		ie.Children = append(ie.Children, pfcp.U8IE(pfcp.IEQFI, q.QFI))
	}
	return ie
}

// URR describes a Create URR (or an Update URR).
type URR struct {
	ID       uint32
	Method   uint8  // pfcp.Measure*
	Triggers uint32 // pfcp.Trigger*
	Period   uint32
	// Volume threshold and quota, total octets (0: none).
	VolumeThreshold uint64
	VolumeQuota     uint64
	TimeThreshold   uint32
}

// IE encodes a Create URR.
func (u URR) IE() *pfcp.IE { return u.encode(pfcp.IECreateURR) }

// UpdateIE encodes an Update URR.
func (u URR) UpdateIE() *pfcp.IE { return u.encode(pfcp.IEUpdateURR) }

func (u URR) encode(t pfcp.IEType) *pfcp.IE {
	ie := pfcp.Group(t, pfcp.U32IE(pfcp.IEURRID, u.ID), pfcp.U8IE(pfcp.IEMeasurementMethod, u.Method),
		pfcp.FlagsIE(pfcp.IEReportingTriggers, u.Triggers, 3))
	if u.Period != 0 {
		ie.Children = append(ie.Children, pfcp.U32IE(pfcp.IEMeasurementPeriod, u.Period))
	}
	if u.VolumeThreshold != 0 {
		ie.Children = append(ie.Children, pfcp.Volume{HasTotal: true, Total: u.VolumeThreshold}.IE(pfcp.IEVolumeThreshold))
	}
	if u.VolumeQuota != 0 {
		ie.Children = append(ie.Children, pfcp.Volume{HasTotal: true, Total: u.VolumeQuota}.IE(pfcp.IEVolumeQuota))
	}
	if u.TimeThreshold != 0 {
		ie.Children = append(ie.Children, pfcp.U32IE(pfcp.IETimeThreshold, u.TimeThreshold))
	}
	return ie
}

// UsageReports reads the usage reports of a message (any of the three
// report IEs).
func UsageReports(m *pfcp.Message) []Usage {
	var out []Usage
	for _, t := range []pfcp.IEType{pfcp.IEUsageReportSMR, pfcp.IEUsageReportSDR, pfcp.IEUsageReportSRR} {
		for _, ie := range m.IEs.All(t) {
			var u Usage
			u.URR, _ = ie.Children.Find(pfcp.IEURRID).U32()
			u.SEQN, _ = ie.Children.Find(pfcp.IEURSEQN).U32()
			if tr := ie.Children.Find(pfcp.IEUsageReportTrigger); tr != nil {
				u.Trigger = tr.Flags()
			}
			if v := ie.Children.Find(pfcp.IEVolumeMeasurement); v != nil {
				u.Volume, _ = pfcp.ParseVolume(v.Value)
			}
			if d := ie.Children.Find(pfcp.IEDurationMeasurement); d != nil {
				u.Duration, _ = d.U32()
				u.HasDuration = true
			}
			out = append(out, u)
		}
	}
	return out
}

// Usage is a usage report as received.
type Usage struct {
	URR         uint32
	SEQN        uint32
	Trigger     uint32
	Volume      pfcp.Volume
	Duration    uint32
	HasDuration bool
}
