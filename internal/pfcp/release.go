package pfcp

import (
	"fmt"
	"time"
)

// Values of the association release procedures (TS 29.244 clause 5.18,
// 6.2.7, 6.2.8): the Enhanced PFCP Association Release feature and the IEs
// a UP function uses to ask its CP function for a release.

// CPFeatureEPFAR is the CP Function Features bit (8.2.58, octet 5 bit 3)
// of the Enhanced PFCP Association Release feature.
const CPFeatureEPFAR uint32 = 1 << 2

// UsageTEBUR is the Usage Report Trigger bit (8.2.41, octet 7 bit 2):
// the UP function terminated the session (Termination By UP function
// Report).
const UsageTEBUR uint32 = 1 << 17

// Flag bits of the release procedures' flag IEs.
const (
	// PARPS (PFCPAUReq-Flags, 8.2.120): the association is going to be
	// released; final non-zero usage reports are to be collected.
	FlagPARPS uint32 = 0x01
	// SARR (PFCP Association Release Request, 8.2.82): the UP function
	// asks the CP function to release the association.
	FlagSARR uint32 = 0x01
	// URSS (same IE): the non-zero usage reports of the sessions the
	// release affects have been sent.
	FlagURSS uint32 = 0x02
	// PSDBU (PFCPSRReq-Flags, 8.2.119): the UP function deleted the
	// session; the report's usage reports are its last.
	FlagPSDBU uint32 = 0x01
)

// timerUnits are the units of a Timer value (8.2.78, as the GPRS timer
// of TS 24.008): the unit's code and its length. A value is 5 bits.
var timerUnits = []struct {
	code byte
	unit time.Duration
}{
	{0, 2 * time.Second}, {1, time.Minute}, {2, 10 * time.Minute}, {3, time.Hour}, {4, 10 * time.Hour},
}

// timerInfinite is the unit code of an infinite timer.
const timerInfinite = 7

// TimerIE encodes a duration as a Timer value (the Graceful Release
// Period): in the finest unit that holds it, rounded up so that the peer
// never gets less time than asked. Beyond 310 hours the timer is infinite.
func TimerIE(t IEType, d time.Duration) *IE {
	for _, u := range timerUnits {
		v := (d + u.unit - 1) / u.unit
		if v <= 31 {
			return NewIE(t, []byte{u.code<<5 | byte(v)})
		}
	}
	return NewIE(t, []byte{timerInfinite << 5})
}

// Timer reads a Timer value; an infinite one is -1. Unit codes the
// specification leaves undefined count as minutes, as it says.
func (ie *IE) Timer() (time.Duration, error) {
	if len(ie.Value) < 1 {
		return 0, fmt.Errorf("%s: empty", ie.Type)
	}
	code, v := ie.Value[0]>>5, time.Duration(ie.Value[0]&0x1f)
	if code == timerInfinite {
		return -1, nil
	}
	for _, u := range timerUnits {
		if u.code == code {
			return v * u.unit, nil
		}
	}
	return v * time.Minute, nil
}
