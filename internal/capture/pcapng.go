package capture

import (
	"bufio"
	"encoding/binary"
	"io"
	"time"
)

// Direction of a captured frame relative to its capture point (as the
// capture NF reports it): ingress is towards the cube or host that owns the
// point.
const (
	Ingress = 0
	Egress  = 1
)

// Packet is one captured frame.
type Packet struct {
	Time   time.Time
	Dir    int
	Len    int // on the wire
	Data   []byte
	Iface  int // index of the Interface it was captured on, in the file
	Ifname string
}

// Interface describes one capture point in a pcapng file.
type Interface struct {
	Name        string // the point: "cube:port" or a Linux interface
	Description string
	Filter      string
	Snaplen     int
}

// Stats are a capture's counters, written at the end of a pcapng file.
type Stats struct {
	Start, End time.Time
	Seen       uint64 // frames in the directions captured
	Matched    uint64 // ... that the filter took
	Captured   uint64 // ... copied to the ring
	RateDrop   uint64 // ... over the capture's rate
	RingDrop   uint64 // ... the ring had no room for
	Delivered  uint64 // frames written to the file
}

// NgWriter writes pcapng (draft-ietf-opsawg-pcapng): a section header, one
// interface description per capture point named after it, enhanced packet
// blocks with nanosecond timestamps and the direction (epb_flags), and
// interface statistics at the end. Flush after each packet when streaming.
type NgWriter struct {
	w   *bufio.Writer
	buf []byte
}

const (
	blockSHB = 0x0A0D0D0A
	blockIDB = 0x00000001
	blockISB = 0x00000005
	blockEPB = 0x00000006

	linktypeEthernet = 1
)

// NewNgWriter writes the section header (with comment as its opt_comment)
// and the interfaces' descriptions.
func NewNgWriter(w io.Writer, comment string, ifaces []Interface) (*NgWriter, error) {
	nw := &NgWriter{w: bufio.NewWriterSize(w, 64<<10)}
	var body []byte
	body = le32(body, 0x1A2B3C4D)
	body = le16(body, 1)
	body = le16(body, 0)
	body = le64(body, ^uint64(0)) // section length unknown (streamed)
	if comment != "" {
		body = option(body, 1, []byte(comment))
	}
	body = option(body, 4, []byte("edgenf")) // shb_userappl
	body = endOptions(body)
	if err := nw.block(blockSHB, body); err != nil {
		return nil, err
	}
	for _, ifc := range ifaces {
		body = body[:0]
		body = le16(body, linktypeEthernet)
		body = le16(body, 0)
		body = le32(body, uint32(ifc.Snaplen))
		body = option(body, 2, []byte(ifc.Name)) // if_name
		if ifc.Description != "" {
			body = option(body, 3, []byte(ifc.Description))
		}
		body = option(body, 9, []byte{9}) // if_tsresol: nanoseconds
		if ifc.Filter != "" {
			body = option(body, 11, append([]byte{0}, ifc.Filter...)) // if_filter, libpcap syntax
		}
		body = endOptions(body)
		if err := nw.block(blockIDB, body); err != nil {
			return nil, err
		}
	}
	return nw, nil
}

// WritePacket writes one enhanced packet block.
func (nw *NgWriter) WritePacket(p Packet) error {
	ts := uint64(p.Time.UnixNano())
	body := nw.buf[:0]
	body = le32(body, uint32(p.Iface))
	body = le32(body, uint32(ts>>32))
	body = le32(body, uint32(ts))
	body = le32(body, uint32(len(p.Data)))
	body = le32(body, uint32(p.Len))
	body = append(body, p.Data...)
	body = pad4(body)
	flags := uint32(1) // inbound
	if p.Dir == Egress {
		flags = 2 // outbound
	}
	body = option(body, 2, le32(nil, flags)) // epb_flags
	body = endOptions(body)
	nw.buf = body
	return nw.block(blockEPB, body)
}

// WriteStats writes interface statistics for interface iface.
func (nw *NgWriter) WriteStats(iface int, s Stats) error {
	ts := uint64(s.End.UnixNano())
	var body []byte
	body = le32(body, uint32(iface))
	body = le32(body, uint32(ts>>32))
	body = le32(body, uint32(ts))
	start := uint64(s.Start.UnixNano())
	body = option(body, 2, le32(le32(nil, uint32(start>>32)), uint32(start))) // isb_starttime
	body = option(body, 3, le32(le32(nil, uint32(ts>>32)), uint32(ts)))       // isb_endtime
	body = option(body, 4, le64(nil, s.Seen))                                 // isb_ifrecv
	body = option(body, 5, le64(nil, s.RateDrop+s.RingDrop))                  // isb_ifdrop
	body = option(body, 6, le64(nil, s.Matched))                              // isb_filteraccept
	body = option(body, 8, le64(nil, s.Delivered))                            // isb_usrdeliv
	body = endOptions(body)
	return nw.block(blockISB, body)
}

// Flush writes what is buffered.
func (nw *NgWriter) Flush() error { return nw.w.Flush() }

func (nw *NgWriter) block(typ uint32, body []byte) error {
	total := uint32(12 + len(body))
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[0:], typ)
	binary.LittleEndian.PutUint32(hdr[4:], total)
	if _, err := nw.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := nw.w.Write(body); err != nil {
		return err
	}
	_, err := nw.w.Write(hdr[4:8])
	return err
}

func option(b []byte, code uint16, v []byte) []byte {
	b = le16(b, code)
	b = le16(b, uint16(len(v)))
	b = append(b, v...)
	return pad4(b)
}

func endOptions(b []byte) []byte { return le32(b, 0) }

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func le16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func le32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func le64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
