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

// ToPcap converts a pcapng stream as NgWriter writes it (little-endian, one
// section) into classic pcap with nanosecond timestamps, packet by packet as
// it arrives, for tools that want pcap. pcap has no place for the
// direction or the point's name: they are lost.
func ToPcap(r io.Reader, w io.Writer, flush func() error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	pw := pcapgo.NewWriterNanos(w)
	header := false
	var hdr [8]byte
	for {
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
		body := make([]byte, total-8)
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("pcapng stream: %w", err)
		}
		body = body[:len(body)-4]
		switch typ {
		case blockIDB:
			if !header && len(body) >= 8 {
				if err := pw.WriteFileHeader(binary.LittleEndian.Uint32(body[4:]), layers.LinkTypeEthernet); err != nil {
					return err
				}
				header = true
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
			if err := pw.WritePacket(ci, body[20:20+caplen]); err != nil {
				return err
			}
			if flush != nil {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
}
