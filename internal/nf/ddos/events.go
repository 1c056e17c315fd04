package ddos

// Detection events: what the fast path punts when it blocks a source.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/ktime"
)

func clearEvents(h cube.Handle, _ *cube.Cube, _ any) (any, error) {
	ctl := cube.ControllerOf[*controller](h)
	ctl.mu.Lock()
	n := len(ctl.events)
	ctl.events = nil
	ctl.mu.Unlock()
	return map[string]int{"cleared": n}, nil
}

// Events returns the recorded detections, oldest first.
func (ctl *controller) Events() []Event {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return append([]Event{}, ctl.events...)
}

// Event is one detection.
type Event struct {
	Time      time.Time `json:"time"`
	Source    string    `json:"source"`
	Reason    string    `json:"reason"` // port-scan or rate
	Count     uint32    `json:"count"`  // distinct ports probed, or packets in the window
	Direction string    `json:"direction"`
	// BlockedUntil is when the block ends.
	BlockedUntil time.Time `json:"blocked_until"`
	Mirrored     bool      `json:"mirrored"`
	Packet       string    `json:"packet"` // the packet that tipped the detection
}

const keepEvents = 1024

// HandlePunt records a detection event.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	ev := Event{Time: time.Now().UTC(), Reason: reasonNames[p.Reason], Count: p.Arg,
		Direction: datapath.Direction(p.InPort).String()}
	if ev.Reason == "" {
		ev.Reason = fmt.Sprintf("reason-%d", p.Reason)
	}
	src, summary := describe(p.Frame)
	ev.Source, ev.Packet = src, summary
	ctl.mu.Lock()
	if a, err := netip.ParseAddr(src); err == nil {
		if m, err := h.Map("dd_blocked"); err == nil {
			var v blockVal
			if m.Lookup(key16(a), &v) == nil {
				ev.BlockedUntil = ktime.Wall(ktime.Base(), v.Until)
			}
		}
	}
	ev.Mirrored = p.Reason == ReasonScan && ctl.cfg.MirrorInterface != ""
	ctl.events = append(ctl.events, ev)
	if len(ctl.events) > keepEvents {
		ctl.events = ctl.events[len(ctl.events)-keepEvents:]
	}
	ctl.mu.Unlock()
	what := "packets in the window"
	if p.Reason == ReasonScan {
		what = "distinct ports probed"
	}
	h.Logf("ddos: blocked %s for %s (%d %s) until %s; packet %s", ev.Source, ev.Reason, ev.Count, what,
		ev.BlockedUntil.Format(time.RFC3339), ev.Packet)
}

// describe returns the source address of an Ethernet frame and a one-line
// summary.
func describe(f []byte) (string, string) {
	off := 14
	if len(f) < off {
		return "?", "short frame"
	}
	et := binary.BigEndian.Uint16(f[12:14])
	for (et == 0x8100 || et == 0x88a8) && len(f) >= off+4 {
		et = binary.BigEndian.Uint16(f[off+2 : off+4])
		off += 4
	}
	var src, dst netip.Addr
	var proto byte
	var l4 int
	switch {
	case et == 0x0800 && len(f) >= off+20:
		src = netip.AddrFrom4([4]byte(f[off+12 : off+16]))
		dst = netip.AddrFrom4([4]byte(f[off+16 : off+20]))
		proto = f[off+9]
		l4 = off + int(f[off]&0xf)*4
	case et == 0x86dd && len(f) >= off+40:
		src = netip.AddrFrom16([16]byte(f[off+8 : off+24]))
		dst = netip.AddrFrom16([16]byte(f[off+24 : off+40]))
		proto = f[off+6]
		l4 = off + 40
	default:
		return "?", fmt.Sprintf("ethertype %#04x", et)
	}
	names := map[byte]string{6: "TCP", 17: "UDP", 1: "ICMP", 58: "ICMPv6"}
	pn := names[proto]
	if pn == "" {
		pn = fmt.Sprintf("proto %d", proto)
	}
	if (proto == 6 || proto == 17) && len(f) >= l4+4 {
		sp := binary.BigEndian.Uint16(f[l4:])
		dp := binary.BigEndian.Uint16(f[l4+2:])
		s := fmt.Sprintf("%s %s → %s", pn, netip.AddrPortFrom(src, sp), netip.AddrPortFrom(dst, dp))
		if proto == 6 && len(f) >= l4+14 {
			s += tcpFlags(f[l4+13])
		}
		return src.String(), s
	}
	return src.String(), fmt.Sprintf("%s %s → %s", pn, src, dst)
}

func tcpFlags(b byte) string {
	var out []string
	for i, n := range []string{"FIN", "SYN", "RST", "PSH", "ACK", "URG"} {
		if b&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return " [" + strings.Join(out, ",") + "]"
}
