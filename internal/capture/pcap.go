package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// ReadBlocks reads a pcapng stream as NgWriter writes it (little-endian,
// one section), calling fn with each block's type and its whole bytes as
// soon as the block is complete (valid until fn returns).
func ReadBlocks(r io.Reader, fn func(typ uint32, block []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("pcapng stream: %w", err)
		}
		typ := binary.LittleEndian.Uint32(hdr[0:])
		total := binary.LittleEndian.Uint32(hdr[4:])
		if total < 12 || total%4 != 0 || total > 1<<24 {
			return fmt.Errorf("pcapng stream: block of %d bytes", total)
		}
		buf = append(buf[:0], hdr[:]...)
		buf = append(buf, make([]byte, total-8)...)
		if _, err := io.ReadFull(br, buf[8:]); err != nil {
			return fmt.Errorf("pcapng stream: %w", err)
		}
		if err := fn(typ, buf); err != nil {
			return err
		}
	}
}

// PcapWriter converts pcapng blocks into classic pcap with nanosecond
// timestamps, for tools that want pcap. pcap has no place for the
// direction or the point's name: they are lost.
type PcapWriter struct {
	pw     *pcapgo.Writer
	header bool
}

// NewPcapWriter writes pcap to w.
func NewPcapWriter(w io.Writer) *PcapWriter { return &PcapWriter{pw: pcapgo.NewWriterNanos(w)} }

// Block converts one pcapng block (the file header comes from the first
// interface description, the packets from enhanced packet blocks).
func (c *PcapWriter) Block(typ uint32, block []byte) error {
	body := block[8 : len(block)-4]
	switch typ {
	case blockIDB:
		if !c.header && len(body) >= 8 {
			c.header = true
			return c.pw.WriteFileHeader(binary.LittleEndian.Uint32(body[4:]), layers.LinkTypeEthernet)
		}
	case blockEPB:
		if len(body) < 20 {
			return fmt.Errorf("pcapng stream: short packet block")
		}
		ts := uint64(binary.LittleEndian.Uint32(body[4:]))<<32 | uint64(binary.LittleEndian.Uint32(body[8:]))
		caplen := binary.LittleEndian.Uint32(body[12:])
		if int(caplen) > len(body)-20 {
			return fmt.Errorf("pcapng stream: packet block longer than its data")
		}
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(ts)), CaptureLength: int(caplen), Length: int(binary.LittleEndian.Uint32(body[16:]))}
		return c.pw.WritePacket(ci, body[20:20+caplen])
	}
	return nil
}

// ParseStats reads an interface statistics block's counters (as
// WriteStats writes them).
func ParseStats(block []byte) Stats {
	var s Stats
	body := block[8 : len(block)-4]
	if len(body) < 12 {
		return s
	}
	opts := body[12:]
	for len(opts) >= 4 {
		code := binary.LittleEndian.Uint16(opts)
		n := int(binary.LittleEndian.Uint16(opts[2:]))
		if code == 0 || 4+n > len(opts) {
			break
		}
		v := opts[4 : 4+n]
		if n == 8 {
			x := binary.LittleEndian.Uint64(v)
			switch code {
			case 4:
				s.Seen = x
			case 5:
				s.RingDrop = x // rate and ring drops together
			case 6:
				s.Matched = x
			case 8:
				s.Delivered = x
			}
		}
		opts = opts[4+(n+3)&^3:]
	}
	return s
}

// IsPacket and IsStats tell the blocks ReadBlocks passes apart.
func IsPacket(typ uint32) bool { return typ == blockEPB }

// IsStats: see IsPacket.
func IsStats(typ uint32) bool { return typ == blockISB }
