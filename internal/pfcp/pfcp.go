// Package pfcp is a codec for PFCP, the Packet Forwarding Control Protocol
// between a 5G SMF (or an EPC SGW-C/PGW-C) and a user plane function (N4,
// Sx), as specified by 3GPP TS 29.244 (release 16 and later).
//
// The codec is driven by the specification's tables (spec.go): which IE type
// carries what, which IEs a message or a grouped IE holds and with which
// presence. Parse turns a datagram into a Message of IE trees, Check
// validates one against its table and answers with the cause value the
// specification prescribes for what is wrong, and the typed values
// (values.go) read and write the IEs' contents. What the IEs mean to a
// session (rules, actions, reports) is the business of the agent, not of
// this package.
package pfcp

import (
	"encoding/binary"
	"fmt"
)

// Version is the PFCP version this codec speaks.
const Version = 1

// Port is the UDP port of PFCP.
const Port = 8805

// MsgType is a message type (TS 29.244 table 7.3-1).
type MsgType uint8

// Message types.
const (
	HeartbeatRequest               MsgType = 1
	HeartbeatResponse              MsgType = 2
	PFDManagementRequest           MsgType = 3
	PFDManagementResponse          MsgType = 4
	AssociationSetupRequest        MsgType = 5
	AssociationSetupResponse       MsgType = 6
	AssociationUpdateRequest       MsgType = 7
	AssociationUpdateResponse      MsgType = 8
	AssociationReleaseRequest      MsgType = 9
	AssociationReleaseResponse     MsgType = 10
	VersionNotSupportedResponse    MsgType = 11
	NodeReportRequest              MsgType = 12
	NodeReportResponse             MsgType = 13
	SessionSetDeletionRequest      MsgType = 14
	SessionSetDeletionResponse     MsgType = 15
	SessionSetModificationRequest  MsgType = 16
	SessionSetModificationResponse MsgType = 17
	SessionEstablishmentRequest    MsgType = 50
	SessionEstablishmentResponse   MsgType = 51
	SessionModificationRequest     MsgType = 52
	SessionModificationResponse    MsgType = 53
	SessionDeletionRequest         MsgType = 54
	SessionDeletionResponse        MsgType = 55
	SessionReportRequest           MsgType = 56
	SessionReportResponse          MsgType = 57
)

// Message is one PFCP message: its header fields and its IEs.
type Message struct {
	Type MsgType
	// HasSEID is the header's S flag: session messages carry a SEID, node
	// messages do not.
	HasSEID bool
	SEID    uint64
	// Seq is the 24-bit sequence number.
	Seq uint32
	// HasPriority is the MP flag; Priority is 4 bits.
	HasPriority bool
	Priority    uint8
	IEs         IEs
}

// HeaderLen is the length of a header with (16) or without (8) a SEID.
func HeaderLen(hasSEID bool) int {
	if hasSEID {
		return 16
	}
	return 8
}

// MaxMessage is the largest message Marshal writes and Parse reads: the
// message length field counts at most 65535 octets after the first four.
const MaxMessage = 65535 + 4

// Marshal encodes the message (FO flag clear).
func (m *Message) Marshal() []byte {
	return m.marshal(nil, false)
}

// MarshalBundle encodes messages bundled in one datagram (TS 29.244 clause
// 7.2.1A): every message but the last has the FO flag set.
func MarshalBundle(msgs ...*Message) []byte {
	var b []byte
	for i, m := range msgs {
		b = m.marshal(b, i < len(msgs)-1)
	}
	return b
}

func (m *Message) marshal(b []byte, followOn bool) []byte {
	start := len(b)
	flags := byte(Version << 5)
	if followOn {
		flags |= 0x04
	}
	if m.HasPriority && m.HasSEID {
		flags |= 0x02
	}
	if m.HasSEID {
		flags |= 0x01
	}
	b = append(b, flags, byte(m.Type), 0, 0)
	if m.HasSEID {
		b = binary.BigEndian.AppendUint64(b, m.SEID)
	}
	b = append(b, byte(m.Seq>>16), byte(m.Seq>>8), byte(m.Seq), 0)
	if m.HasPriority && m.HasSEID {
		b[len(b)-1] = (m.Priority & 0x0f) << 4
	}
	for _, ie := range m.IEs {
		b = ie.append(b)
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start-4))
	return b
}

// Parse decodes every message of a datagram (several when bundled). The IEs
// are split into trees (grouped IEs into their children) but not checked
// against the message's table: that is Check's job. The error of a datagram
// that cannot be read at all is a *Error whose Cause says how to answer, if
// at all.
func Parse(b []byte) ([]*Message, error) {
	var out []*Message
	for len(b) > 0 {
		m, n, followOn, err := parseOne(b)
		if err != nil {
			return out, err
		}
		out = append(out, m)
		b = b[n:]
		if !followOn {
			break
		}
	}
	return out, nil
}

// ParseMessage decodes a datagram that holds exactly one message.
func ParseMessage(b []byte) (*Message, error) {
	m, n, _, err := parseOne(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return m, &Error{Cause: CauseInvalidLength, Msg: fmt.Sprintf("%d octets after the message", len(b)-n), Header: m}
	}
	return m, nil
}

func parseOne(b []byte) (*Message, int, bool, error) {
	if len(b) < 8 {
		return nil, 0, false, &Error{Msg: fmt.Sprintf("%d octets are too short for a PFCP header", len(b))}
	}
	flags := b[0]
	m := &Message{Type: MsgType(b[1]), HasSEID: flags&0x01 != 0, HasPriority: flags&0x02 != 0}
	hl := HeaderLen(m.HasSEID)
	if len(b) < hl {
		return m, 0, false, &Error{Msg: fmt.Sprintf("%d octets are too short for a PFCP header with a SEID", len(b))}
	}
	n := int(binary.BigEndian.Uint16(b[2:])) + 4
	off := 4
	if m.HasSEID {
		m.SEID = binary.BigEndian.Uint64(b[4:])
		off = 12
	}
	m.Seq = uint32(b[off])<<16 | uint32(b[off+1])<<8 | uint32(b[off+2])
	if m.HasPriority && m.HasSEID {
		m.Priority = b[off+3] >> 4
	} else {
		m.HasPriority = false
	}
	if v := flags >> 5; v != Version {
		// Answered with the sequence number, read as version 1 lays it
		// out (TS 29.244 7.6.2).
		return m, 0, false, &Error{Cause: causeVersion, Msg: fmt.Sprintf("PFCP version %d is not supported", v), Header: m}
	}
	if n < hl || n > len(b) {
		return m, 0, false, &Error{Cause: CauseInvalidLength, Msg: fmt.Sprintf("message length %d does not fit the %d octets received", n, len(b)), Header: m}
	}
	ies, err := parseIEs(b[hl:n], 0)
	if err != nil {
		return m, 0, false, withHeader(err, m)
	}
	m.IEs = ies
	return m, n, flags&0x04 != 0, nil
}

// IsRequest reports whether t is a request (odd types, and the session
// messages 50, 52, 54, 56): its response is t+1.
func (t MsgType) IsRequest() bool {
	if t == VersionNotSupportedResponse {
		return false
	}
	if t >= SessionEstablishmentRequest {
		return t%2 == 0
	}
	return t%2 == 1
}

// IsSession reports whether messages of type t carry a SEID.
func (t MsgType) IsSession() bool { return t >= SessionEstablishmentRequest }

func (t MsgType) String() string {
	if s, ok := msgSpecs[t]; ok {
		return s.Name
	}
	return fmt.Sprintf("message type %d", uint8(t))
}

// Response starts the response to request m: same sequence number; the
// caller sets the SEID of session responses (the peer's).
func (m *Message) Response(ies ...*IE) *Message {
	r := &Message{Type: m.Type + 1, Seq: m.Seq, IEs: ies}
	if m.Type.IsSession() {
		r.HasSEID = true
	}
	return r
}
