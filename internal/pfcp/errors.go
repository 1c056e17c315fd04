package pfcp

import (
	"errors"
	"fmt"
	"strings"
)

// Cause is a cause value (TS 29.244 clause 8.2.1).
type Cause uint8

// Cause values.
const (
	CauseAccepted                    Cause = 1
	CauseMoreUsageReports            Cause = 2
	CausePartiallyAccepted           Cause = 3
	CauseRejected                    Cause = 64
	CauseSessionNotFound             Cause = 65
	CauseMandatoryIEMissing          Cause = 66
	CauseConditionalIEMissing        Cause = 67
	CauseInvalidLength               Cause = 68
	CauseMandatoryIEIncorrect        Cause = 69
	CauseInvalidForwardingPolicy     Cause = 70
	CauseInvalidFTEIDAllocation      Cause = 71
	CauseNoAssociation               Cause = 72
	CauseRuleFailure                 Cause = 73
	CauseCongestion                  Cause = 74
	CauseNoResources                 Cause = 75
	CauseServiceNotSupported         Cause = 76
	CauseSystemFailure               Cause = 77
	CauseRedirectionRequested        Cause = 78
	CauseAllDynamicAddressesOccupied Cause = 79
	CauseUnknownPredefinedRule       Cause = 80
	CauseUnknownApplicationID        Cause = 81
)

// causeVersion marks an error answered with a Version Not Supported
// Response rather than a cause value.
const causeVersion Cause = 255

var causeNames = map[Cause]string{
	CauseAccepted:                    "Request accepted",
	CauseMoreUsageReports:            "More Usage Report to send",
	CausePartiallyAccepted:           "Request partially accepted",
	CauseRejected:                    "Request rejected (reason not specified)",
	CauseSessionNotFound:             "Session context not found",
	CauseMandatoryIEMissing:          "Mandatory IE missing",
	CauseConditionalIEMissing:        "Conditional IE missing",
	CauseInvalidLength:               "Invalid length",
	CauseMandatoryIEIncorrect:        "Mandatory IE incorrect",
	CauseInvalidForwardingPolicy:     "Invalid Forwarding Policy",
	CauseInvalidFTEIDAllocation:      "Invalid F-TEID allocation option",
	CauseNoAssociation:               "No established PFCP Association",
	CauseRuleFailure:                 "Rule creation/modification Failure",
	CauseCongestion:                  "PFCP entity in congestion",
	CauseNoResources:                 "No resources available",
	CauseServiceNotSupported:         "Service not supported",
	CauseSystemFailure:               "System failure",
	CauseRedirectionRequested:        "Redirection Requested",
	CauseAllDynamicAddressesOccupied: "All dynamic addresses are occupied",
	CauseUnknownPredefinedRule:       "Unknown Pre-defined Rule",
	CauseUnknownApplicationID:        "Unknown Application ID",
}

func (c Cause) String() string {
	if s, ok := causeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("cause %d", uint8(c))
}

// Accepted reports whether the cause is an acceptance (1..63).
func (c Cause) Accepted() bool { return c >= 1 && c < 64 }

// Error is what is wrong with a received message, with the cause value the
// specification prescribes for answering a request that has it and, where
// one IE is to blame, its type for the Offending IE.
type Error struct {
	// Cause is 0 when the message is to be silently discarded (too short
	// for a header: there is nothing to answer).
	Cause     Cause
	Offending IEType
	Msg       string
	// Header is the message as far as it could be read (type, SEID,
	// sequence number), to address the answer; nil if not even that.
	Header *Message
	// path names the grouped IEs the problem lies in, outermost first.
	path []IEType
}

func (e *Error) Error() string {
	var b strings.Builder
	for _, t := range e.path {
		b.WriteString(t.String())
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Cause != 0 && e.Cause != causeVersion {
		fmt.Fprintf(&b, " (cause %d, %s)", uint8(e.Cause), e.Cause)
	}
	return b.String()
}

// VersionNotSupported reports whether the answer is a Version Not Supported
// Response.
func (e *Error) VersionNotSupported() bool { return e.Cause == causeVersion }

// Errorf makes an error answered with cause c, naming the offending IE.
func Errorf(c Cause, offending IEType, format string, args ...any) *Error {
	return &Error{Cause: c, Offending: offending, Msg: fmt.Sprintf(format, args...)}
}

// within records that err lies inside a grouped IE of type t.
func within(err error, t IEType) error {
	var e *Error
	if errors.As(err, &e) {
		e.path = append([]IEType{t}, e.path...)
		return e
	}
	return err
}

func withHeader(err error, m *Message) error {
	var e *Error
	if errors.As(err, &e) && e.Header == nil {
		e.Header = m
	}
	return err
}

// AsError returns err as a *Error (cause Rejected if it is not one).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Cause: CauseRejected, Msg: err.Error()}
}
