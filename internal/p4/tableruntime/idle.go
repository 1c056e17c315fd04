package tableruntime

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// Idle timeouts: tables with support_timeout = true keep, in each entry's
// value, the bpf_ktime_get_ns() of its last hit (the data path refreshes it
// at most every 100 ms). Writing an entry counts as a hit.

// idleOffset is where an entry's last hit is in what the table's map
// stores (scan tables store the match in front of the value); -1: none.
func idleOffset(t *p4info.TableLayout) int {
	switch {
	case t.IdleOffset == 0:
		return -1
	case t.Kind == "scan":
		return t.EntryValueOffset + t.IdleOffset
	}
	return t.IdleOffset
}

func stampIdle(t *p4info.TableLayout, e *p4info.Entry) {
	if off := idleOffset(t); off >= 0 && off+8 <= len(e.Value) {
		binary.NativeEndian.PutUint64(e.Value[off:], ktime.Now())
	}
}

// Idle returns how long an entry of a table with support_timeout has not
// been hit.
func (p *Program) Idle(table string, matches []p4info.Match, priority uint32) (time.Duration, error) {
	t, err := p.table(table)
	if err != nil {
		return 0, err
	}
	off := idleOffset(t)
	if off < 0 {
		return 0, fmt.Errorf("table %s has no support_timeout", t.Name)
	}
	_, _, val, err := p.locate(t, matches, priority)
	if err != nil {
		return 0, err
	}
	if off+8 > len(val) {
		return 0, fmt.Errorf("table %s: value of %d bytes has no last hit", t.Name, len(val))
	}
	last, now := binary.NativeEndian.Uint64(val[off:]), ktime.Now()
	if last >= now {
		return 0, nil
	}
	return time.Duration(now - last), nil
}
