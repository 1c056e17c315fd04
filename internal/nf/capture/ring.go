package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	pcap "github.com/edgenf/edgenf/internal/capture"
)

type kstats struct {
	Seen, Matched, Captured, RateDrop, RingDrop, Tokens, Last uint64
}

// Reader reads a capture's ring buffer.
type Reader struct {
	rd    *ringbuf.Reader
	stats *ebpf.Map
	rec   ringbuf.Record
}

// Open starts reading the capture cube's ring (one reader at a time).
func Open(h Maps) (*Reader, error) {
	ring, err := h.Map("cap_ring")
	if err != nil {
		return nil, err
	}
	st, err := h.Map("cap_stats")
	if err != nil {
		return nil, err
	}
	ring, err = ring.Clone()
	if err != nil {
		return nil, err
	}
	defer ring.Close()
	if st, err = st.Clone(); err != nil {
		return nil, err
	}
	rd, err := ringbuf.NewReader(ring)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &Reader{rd: rd, stats: st}, nil
}

// ErrTimeout is Next's answer when no frame came before the deadline.
var ErrTimeout = errors.New("no frame")

// recHdr is struct cap_rec's size.
const recHdr = 24

// Next returns the next captured frame (its Time in CLOCK_MONOTONIC
// nanoseconds since boot, to be placed by the caller), waiting until
// deadline. Data is valid until the next call.
func (r *Reader) Next(deadline time.Time) (mono uint64, p pcap.Packet, err error) {
	r.rd.SetDeadline(deadline)
	if err := r.rd.ReadInto(&r.rec); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed) {
			return 0, p, ErrTimeout
		}
		return 0, p, err
	}
	s := r.rec.RawSample
	if len(s) < recHdr {
		return 0, p, fmt.Errorf("capture record of %d bytes", len(s))
	}
	mono = binary.NativeEndian.Uint64(s[0:])
	p.Len = int(binary.NativeEndian.Uint32(s[8:]))
	caplen := int(binary.NativeEndian.Uint32(s[12:]))
	p.Dir = int(binary.NativeEndian.Uint32(s[16:]))
	if caplen > len(s)-recHdr {
		return 0, p, fmt.Errorf("capture record: %d bytes announced, %d present", caplen, len(s)-recHdr)
	}
	p.Data = s[recHdr : recHdr+caplen]
	return mono, p, nil
}

// Stats sums the capture's counters over the CPUs.
func (r *Reader) Stats() (pcap.Stats, error) {
	return readStats(r.stats)
}

func readStats(m *ebpf.Map) (pcap.Stats, error) {
	var percpu []kstats
	var s pcap.Stats
	if err := m.Lookup(uint32(0), &percpu); err != nil {
		return s, err
	}
	for _, c := range percpu {
		s.Seen += c.Seen
		s.Matched += c.Matched
		s.Captured += c.Captured
		s.RateDrop += c.RateDrop
		s.RingDrop += c.RingDrop
	}
	return s, nil
}

// Close stops reading.
func (r *Reader) Close() error {
	r.stats.Close()
	return r.rd.Close()
}
