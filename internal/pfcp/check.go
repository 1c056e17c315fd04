package pfcp

import (
	"fmt"
	"slices"
)

// Check validates a received message against its table and cleans it the
// way TS 29.244 clause 7.6 prescribes for a receiver:
//   - a mandatory IE missing: cause "Mandatory IE missing", naming it;
//   - a mandatory or conditional IE shorter than its fixed part or with
//     contents its type cannot hold: "Mandatory IE incorrect", naming it
//     (a conditional IE that is present is held to the same standard);
//   - an optional IE that is wrong, an IE the table does not list (unknown
//     or unexpected), and repetitions of an IE that may appear once, are
//     silently discarded: the message goes on without them.
//
// The same rules apply inside grouped IEs. Conditions of conditional IEs
// depend on the meaning of other IEs and are checked by the agent.
func Check(msg *Message) error {
	spec, ok := msgSpecs[msg.Type]
	if !ok {
		return &Error{Msg: fmt.Sprintf("unknown message type %d", uint8(msg.Type)), Header: msg}
	}
	if msg.Type.IsSession() != msg.HasSEID && msg.Type != VersionNotSupportedResponse {
		if msg.Type.IsSession() {
			return &Error{Cause: CauseMandatoryIEIncorrect, Msg: msg.Type.String() + " without a SEID in its header", Header: msg}
		}
		// A node message with a SEID: the SEID is ignored.
		msg.HasSEID, msg.SEID = false, 0
	}
	ies, err := checkIEs(msg.IEs, spec.Fields)
	if err != nil {
		return withHeader(err, msg)
	}
	msg.IEs = ies
	return nil
}

// checkIEs validates and cleans one level of IEs against its fields.
func checkIEs(ies IEs, fields []Field) (IEs, error) {
	// Schemas and messages are short: linear scans beat building maps.
	var seenBuf [24]IEType
	seen := seenBuf[:0]
	out := ies[:0:0]
	for _, ie := range ies {
		i := slices.IndexFunc(fields, func(f Field) bool { return f.Type == ie.Type })
		if i < 0 || (!fields[i].Multi && slices.Contains(seen, ie.Type)) {
			continue // unknown, unexpected or repeated: discarded
		}
		if err := checkIE(ie); err != nil {
			if fields[i].Presence == O {
				continue
			}
			return nil, err
		}
		seen = append(seen, ie.Type)
		out = append(out, ie)
	}
	for _, f := range fields {
		if f.Presence == M && !slices.Contains(seen, f.Type) {
			return nil, &Error{Cause: CauseMandatoryIEMissing, Offending: f.Type, Msg: fmt.Sprintf("%s is missing", f.Type)}
		}
	}
	return out, nil
}

// checkIE validates one IE's contents, recursing into grouped IEs.
func checkIE(ie *IE) error {
	spec := ieSpecs[ie.Type]
	if spec.Grouped {
		kids, err := checkIEs(ie.Children, groupSpecs[ie.Type])
		if err != nil {
			return within(err, ie.Type)
		}
		ie.Children = kids
		return nil
	}
	if len(ie.Value) < spec.Min {
		return &Error{Cause: CauseMandatoryIEIncorrect, Offending: ie.Type,
			Msg: fmt.Sprintf("%s: %d octets, at least %d needed", ie.Type, len(ie.Value), spec.Min)}
	}
	if spec.Check != nil {
		if err := spec.Check(ie.Value); err != nil {
			e := AsError(err)
			e.Cause, e.Offending = CauseMandatoryIEIncorrect, ie.Type
			return e
		}
	}
	return nil
}

// Checked parses a datagram holding one message and checks it.
func Checked(b []byte) (*Message, error) {
	msg, err := ParseMessage(b)
	if err != nil {
		return msg, err
	}
	return msg, Check(msg)
}
