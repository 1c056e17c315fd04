package stf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/internal/datapath"
)

// Live runs of replicating programs: every frame that comes out of any
// port is an output. Copies the program sends through the slow path (XDP,
// see copy.h) are transmitted here the way the daemon does it: out of the
// port, onto the root end of its veth.

// liveRepl is the slow path of a live run.
type liveRepl struct {
	rd *perf.Reader
	tx int // packet socket in the root namespace
}

func (l *live) replSlowPath(st *replState) (*liveRepl, error) {
	if st.lr != nil {
		return st.lr, nil
	}
	rd, err := perf.NewReader(l.dp.PuntMap(), 16*os.Getpagesize())
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		rd.Close()
		return nil, err
	}
	st.lr = &liveRepl{rd: rd, tx: fd}
	return st.lr, nil
}

func (lr *liveRepl) close() {
	lr.rd.Close()
	unix.Close(lr.tx)
}

// sendAll writes a frame onto a port's wire and collects what comes out of
// every port (and the CPU port): until the cube has decided (verdicts), as
// many frames came out as it sent and packet-ins as it punted, and its
// counters stood still for liveSettle (a count read while the program ran
// would end the wait before its last copies); else until nothing more
// comes for liveWait.
func (l *live) sendAll(st *replState, port int, pkt []byte) ([]Output, error) {
	lr, err := l.replSlowPath(st)
	if err != nil {
		return nil, err
	}
	fd, ok := l.socks[port]
	if !ok {
		return nil, fmt.Errorf("port %d is not wired (live runs wire the ports the test uses)", port)
	}
	buf := make([]byte, 65536)
	for _, s := range l.socks { // stale frames
		for {
			if _, ok := recvFrame(s, buf); !ok {
				break
			}
		}
	}
	lr.drain(l, nil)
	before, err := l.verdicts()
	if err != nil {
		return nil, err
	}
	if err := unix.Sendto(fd, pkt, 0, &unix.SockaddrLinklayer{Ifindex: l.ifindex(port)}); err != nil {
		return nil, fmt.Errorf("send on port %d: %w", port, err)
	}
	var outs []Output
	var done verdicts // what the cube had decided when its outputs were all out
	last, doneAt := time.Now(), time.Time{}
	for end := time.Now().Add(10 * liveWait); time.Now().Before(end) && time.Since(last) < liveWait; time.Sleep(time.Millisecond) {
		n := len(outs)
		outs = lr.drain(l, outs)
		for p, s := range l.socks {
			for {
				frame, ok := recvFrame(s, buf)
				if !ok {
					break
				}
				outs = append(outs, Output{Port: p, Data: frame})
			}
		}
		if len(outs) > n {
			last = time.Now()
		}
		now, err := l.verdicts()
		if err != nil {
			return nil, err
		}
		v := now.since(before)
		cpu := 0
		for _, o := range outs {
			if o.Port == CPUPort {
				cpu++
			}
		}
		if !v.any() || uint64(len(outs)-cpu) < v.sent || uint64(cpu) < v.punted {
			doneAt = time.Time{}
			continue
		}
		if doneAt.IsZero() || v != done || len(outs) > n {
			done, doneAt = v, time.Now()
		} else if time.Since(doneAt) >= liveSettle {
			break
		}
	}
	return outs, nil
}

// liveSettle is how long a replicating cube's counters and outputs must
// stand still, all its sent frames out, before a live run takes them as
// all the packet made.
const liveSettle = 20 * time.Millisecond

// drain handles the punt records waiting: copies are sent out of their
// port; packet-ins are outputs on the CPU port.
func (lr *liveRepl) drain(l *live, outs []Output) []Output {
	for {
		lr.rd.SetDeadline(time.Now())
		rec, err := lr.rd.Read()
		if err != nil {
			return outs
		}
		var hdr datapath.PuntHeader
		if binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr) != nil || hdr.Magic != datapath.PuntMagic {
			continue
		}
		frame := rec.RawSample[binary.Size(hdr):]
		if n := int(min(hdr.PktLen, datapath.PuntSnaplen)); len(frame) > n {
			frame = frame[:n]
		}
		if outs == nil && hdr.Reason != datapath.PuntTransmit {
			continue // stale
		}
		switch hdr.Reason {
		case datapath.PuntTransmit:
			if ifi, err := net.InterfaceByName(l.lab.Name(fmt.Sprintf("r%d", hdr.Arg))); err == nil {
				unix.Sendto(lr.tx, frame, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index})
			}
		case 1:
			outs = append(outs, Output{Port: CPUPort, Data: append([]byte(nil), frame...)})
		}
	}
}
