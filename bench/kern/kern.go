// Package kern loads the benchmark's eBPF programs (bpf/bench.bpf.c): the
// live-frames traffic generator, the counting sink, the raw XDP redirect
// baseline and an XDP_PASS program, and holds the helpers to attach them.
package kern

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

//go:embed bpf/bench_xdp.o
var objXDP []byte

// Magic marks generated frames in the UDP payload (sink filter).
const Magic = 0xED6EBE7C

// DefaultDport is the UDP destination port of generated frames.
const DefaultDport = 9

// HistSub and HistBuckets describe the sink's latency histogram.
const (
	HistSub     = 16
	HistBuckets = 1024
)

// Options are load-time constants.
type Options struct {
	Flows int    // distinct flows (source address/port pairs), >= 1
	Stamp bool   // timestamp each frame (latency runs); see also SetStamp
	Dport uint16 // UDP destination port (0: DefaultDport)
}

// Objects is one loaded copy of the programs and their maps.
type Objects struct {
	Gen, Sink, Fwd, Pass      *ebpf.Program
	GenPort, FwdPort          *ebpf.Map // devmaps, key 0
	GenCount, SinkCount, Hist *ebpf.Map
	GenCfg, GenTmpl           *ebpf.Map
	GenMode, GenFlows         *ebpf.Map
	coll                      *ebpf.Collection
}

// Load loads a fresh copy of the programs.
func Load(o Options) (*Objects, error) {
	if len(objXDP) == 0 {
		return nil, errors.New("kern: empty bench_xdp.o (run `make bpf`)")
	}
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(objXDP))
	if err != nil {
		return nil, fmt.Errorf("kern: %w", err)
	}
	if o.Flows < 1 {
		o.Flows = 1
	}
	if o.Dport == 0 {
		o.Dport = DefaultDport
	}
	for name, v := range map[string]any{"nflows": uint32(o.Flows), "sig_dport": o.Dport} {
		vs, ok := spec.Variables[name]
		if !ok {
			return nil, fmt.Errorf("kern: no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return nil, fmt.Errorf("kern: set %s: %w", name, err)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("kern: load: %w", err)
	}
	objs := &Objects{
		Gen: coll.Programs["bench_gen"], Sink: coll.Programs["bench_sink"],
		Fwd: coll.Programs["bench_fwd"], Pass: coll.Programs["bench_pass"],
		GenPort: coll.Maps["gen_port"], FwdPort: coll.Maps["fwd_port"],
		GenCount: coll.Maps["gen_count"], SinkCount: coll.Maps["sink_count"], Hist: coll.Maps["sink_hist"],
		GenCfg: coll.Maps["gen_cfg"], GenTmpl: coll.Maps["gen_tmpl"],
		GenMode: coll.Maps["gen_mode"], GenFlows: coll.Maps["gen_flows"],
		coll: coll,
	}
	if err := objs.SetStamp(o.Stamp); err != nil {
		coll.Close()
		return nil, err
	}
	return objs, nil
}

// TemplateLen is how many leading bytes of the frame the generator restores
// on every frame (headers and payload start); GTPTemplateLen in GTP-U mode.
const (
	TemplateLen    = 14 + 20 + 8 + 16
	GTPTemplateLen = TemplateLen + gtpOverhead
	gtpOverhead    = 20 + 8 + 8 // outer IPv4, UDP, GTP-U
)

// SetTemplate stores the headers the generator writes into every frame; it
// must be called with the frame passed to the generator.
func (o *Objects) SetTemplate(frame []byte) error {
	if len(frame) < TemplateLen {
		return fmt.Errorf("kern: frame shorter than %d bytes", TemplateLen)
	}
	t := make([]byte, GTPTemplateLen)
	copy(t, frame)
	return o.GenTmpl.Put(uint32(0), t)
}

// Generator modes.
const (
	ModePlain = 0 // vary the source address and port (Options.Flows)
	ModeGTPUL = 1 // GTP-U frames, TEID and inner source address from the flows
	ModeDL    = 2 // plain frames, destination address from the flows
	ModeV6    = 3 // IPv6 frames (Frame with IPv6 addresses), varied like ModePlain
)

// MaxFlows is the size of the generator's flow table.
const MaxFlows = 1 << 17

// GenFlow is one flow of ModeGTPUL and ModeDL: a session's uplink TEID and
// its UE's IPv4 address.
type GenFlow struct {
	TEID uint32
	Addr [4]byte
}

// SetMode sets the generator's mode and, for ModeGTPUL and ModeDL, the
// flows it cycles through (frame i is flow i mod len(flows)).
func (o *Objects) SetMode(mode uint32, flows []GenFlow) error {
	if len(flows) > MaxFlows {
		return fmt.Errorf("kern: %d flows, at most %d", len(flows), MaxFlows)
	}
	if len(flows) > 0 {
		keys := make([]uint32, len(flows))
		vals := make([]byte, 8*len(flows))
		for i, f := range flows {
			keys[i] = uint32(i)
			binary.BigEndian.PutUint32(vals[8*i:], f.TEID)
			copy(vals[8*i+4:], f.Addr[:])
		}
		if _, err := o.GenFlows.BatchUpdate(keys, vals, nil); err != nil {
			for i := range flows { // kernels without batch operations
				if err := o.GenFlows.Put(keys[i], vals[8*i:8*i+8]); err != nil {
					return fmt.Errorf("kern: flows: %w", err)
				}
			}
		}
	}
	v := make([]byte, 8)
	binary.NativeEndian.PutUint32(v, mode)
	binary.NativeEndian.PutUint32(v[4:], uint32(len(flows)))
	return o.GenMode.Put(uint32(0), v)
}

// SetStamp turns per-frame timestamps (for the sink's latency histogram) on or off.
func (o *Objects) SetStamp(on bool) error {
	v := uint32(0)
	if on {
		v = 1
	}
	return o.GenCfg.Put(uint32(0), v)
}

// Close releases the programs and maps (attached links hold their own refs).
func (o *Objects) Close() {
	if o != nil && o.coll != nil {
		o.coll.Close()
	}
}

// SetGenTarget makes the generator redirect into ifindex. Devmaps resolve
// the ifindex in the network namespace of the calling thread.
func (o *Objects) SetGenTarget(ifindex int) error {
	return o.GenPort.Put(uint32(0), uint32(ifindex))
}

// SetFwdTarget makes bench_fwd redirect into ifindex (calling thread's netns).
func (o *Objects) SetFwdTarget(ifindex int) error {
	return o.FwdPort.Put(uint32(0), uint32(ifindex))
}

// AttachXDP attaches prog to ifindex in native (driver) mode, in the network
// namespace of the calling thread. Close the link to detach.
func AttachXDP(prog *ebpf.Program, ifindex int) (link.Link, error) {
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, fmt.Errorf("kern: attach XDP to ifindex %d: %w", ifindex, err)
	}
	return l, nil
}

// SumPerCPU reads key of a per-CPU u64 array and sums over CPUs.
func SumPerCPU(m *ebpf.Map, key uint32) (uint64, error) {
	var vals []uint64
	if err := m.Lookup(key, &vals); err != nil {
		return 0, err
	}
	var s uint64
	for _, v := range vals {
		s += v
	}
	return s, nil
}

// GenCounter returns how many frames the generator program produced.
func (o *Objects) GenCounter() (uint64, error) { return SumPerCPU(o.GenCount, 0) }

// SinkCounts returns generator frames and bytes seen by the sink, and other frames.
func (o *Objects) SinkCounts() (pkts, bytes, other uint64, err error) {
	if pkts, err = SumPerCPU(o.SinkCount, 0); err != nil {
		return
	}
	if bytes, err = SumPerCPU(o.SinkCount, 1); err != nil {
		return
	}
	other, err = SumPerCPU(o.SinkCount, 2)
	return
}

// Histogram returns the sink's latency histogram summed over CPUs and
// clears it.
func (o *Objects) Histogram(clear bool) ([]uint64, error) {
	h := make([]uint64, HistBuckets)
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	zero := make([]uint64, ncpu)
	for b := uint32(0); b < HistBuckets; b++ {
		var vals []uint64
		if err := o.Hist.Lookup(b, &vals); err != nil {
			return nil, err
		}
		for _, v := range vals {
			h[b] += v
		}
		if clear && h[b] != 0 {
			if err := o.Hist.Put(b, zero); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

// BucketLow returns the lowest latency (ns) that falls into bucket b.
func BucketLow(b int) uint64 {
	if b < HistSub {
		return uint64(b)
	}
	m := uint(b/HistSub + 3)
	sub := uint64(b % HistSub)
	return (HistSub + sub) << (m - 4)
}

// Quantile returns the q-quantile (0..1) of a histogram in ns, taking the
// midpoint of the bucket; 0 if empty.
func Quantile(h []uint64, q float64) float64 {
	var total uint64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total-1)) + 1
	var acc uint64
	for b, c := range h {
		acc += c
		if acc >= rank {
			lo := BucketLow(b)
			hi := lo + 1
			if b+1 < len(h) {
				hi = BucketLow(b + 1)
			}
			return float64(lo+hi) / 2
		}
	}
	return float64(BucketLow(len(h) - 1))
}

// Frame describes the template frame of the generator.
type Frame struct {
	Size           int // total L2 bytes (no FCS), >= 60; with GTP, of the inner packet as a frame
	SrcMAC, DstMAC net.HardwareAddr
	SrcIP, DstIP   net.IP // IPv4, or IPv6 (ModeV6); the low byte of SrcIP is varied per flow
	Dport          uint16 // 0: DefaultDport
	// GTP, if set, wraps the packet in GTP-U (ModeGTPUL): the frame is
	// Size plus 36 bytes.
	GTP *GTPOuter
}

// GTPOuter is the outer IPv4/UDP/GTP-U header of an uplink frame.
type GTPOuter struct {
	SrcIP, DstIP net.IP // IPv4: the gNB and the UPF's N3 address
	TEID         uint32
}

// Bytes builds the template: Ethernet / IPv4 (checksum set) / UDP (checksum
// 0) / payload {magic, seq, timestamp 0, padding}.
func (f Frame) Bytes() ([]byte, error) {
	const hdr = 14 + 20 + 8 + 16
	if f.Size < 60 {
		f.Size = 60
	}
	if f.Size > 3000 {
		return nil, fmt.Errorf("kern: frame size %d too large", f.Size)
	}
	s4, d4 := f.SrcIP.To4(), f.DstIP.To4()
	if s4 == nil && d4 == nil && len(f.SrcIP) == 16 && len(f.DstIP) == 16 && f.GTP == nil {
		return f.bytes6()
	}
	if s4 == nil || d4 == nil || len(f.SrcMAC) != 6 || len(f.DstMAC) != 6 {
		return nil, fmt.Errorf("kern: frame needs IPv4 addresses and MACs")
	}
	if f.Dport == 0 {
		f.Dport = DefaultDport
	}
	if f.GTP != nil {
		return f.gtpBytes()
	}
	b := make([]byte, f.Size)
	copy(b[0:], f.DstMAC)
	copy(b[6:], f.SrcMAC)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(f.Size-14))
	ip[6] = 0x40 // DF
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:], s4)
	copy(ip[16:], d4)
	ip[15] = 0 // varied by the generator
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], 1024)
	binary.BigEndian.PutUint16(udp[2:], f.Dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(f.Size-34))
	binary.BigEndian.PutUint32(b[42:], Magic)
	for i := hdr; i < f.Size; i++ {
		b[i] = byte(i)
	}
	return b, nil
}

// gtpBytes builds a GTP-U uplink frame: Ethernet / IPv4 / UDP 2152 /
// GTP-U G-PDU (8 octets, no options) / the packet Bytes would build.
func (f Frame) gtpBytes() ([]byte, error) {
	g := f.GTP
	s4, d4 := g.SrcIP.To4(), g.DstIP.To4()
	if s4 == nil || d4 == nil {
		return nil, fmt.Errorf("kern: GTP-U needs IPv4 outer addresses")
	}
	f.GTP = nil
	in, err := f.Bytes()
	if err != nil {
		return nil, err
	}
	pkt := in[14:]
	copy(pkt[12:16], f.SrcIP.To4()) // the UE's whole address (Bytes zeroes its low byte)
	binary.BigEndian.PutUint16(pkt[10:], ipChecksum(pkt[:20]))
	b := make([]byte, 14+gtpOverhead+len(pkt))
	copy(b, in[:14])
	ip := b[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(gtpOverhead+len(pkt)))
	ip[6] = 0x40
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:], s4)
	copy(ip[16:], d4)
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := b[34:42]
	binary.BigEndian.PutUint16(udp[0:], 2152)
	binary.BigEndian.PutUint16(udp[2:], 2152)
	binary.BigEndian.PutUint16(udp[4:], uint16(16+len(pkt)))
	gtp := b[42:50]
	gtp[0], gtp[1] = 0x30, 0xff
	binary.BigEndian.PutUint16(gtp[2:], uint16(len(pkt)))
	binary.BigEndian.PutUint32(gtp[4:], g.TEID)
	copy(b[50:], pkt)
	return b, nil
}

// Template6Len is the IPv6 frame's header and payload start, which the
// generator restores in ModeV6.
const Template6Len = 14 + 40 + 8 + 16

// bytes6 builds the IPv6 template: Ethernet / IPv6 / UDP (checksum set for
// source address ...:0 and port 1024, which the generator varies) / payload.
func (f Frame) bytes6() ([]byte, error) {
	if f.Size < Template6Len {
		f.Size = Template6Len
	}
	if len(f.SrcMAC) != 6 || len(f.DstMAC) != 6 {
		return nil, fmt.Errorf("kern: frame needs MACs")
	}
	if f.Dport == 0 {
		f.Dport = DefaultDport
	}
	b := make([]byte, f.Size)
	copy(b[0:], f.DstMAC)
	copy(b[6:], f.SrcMAC)
	binary.BigEndian.PutUint16(b[12:], 0x86dd)
	ip := b[14:54]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(f.Size-54))
	ip[6], ip[7] = 17, 64
	copy(ip[8:], f.SrcIP.To16())
	copy(ip[24:], f.DstIP.To16())
	ip[23] = 0 // varied by the generator
	udp := b[54:]
	binary.BigEndian.PutUint16(udp[0:], 1024)
	binary.BigEndian.PutUint16(udp[2:], f.Dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(f.Size-54))
	binary.BigEndian.PutUint32(b[62:], Magic)
	for i := Template6Len; i < f.Size; i++ {
		b[i] = byte(i)
	}
	// Checksum over the pseudo-header (addresses, length, next header)
	// and the datagram.
	var s uint32
	add := func(p []byte) {
		for i := 0; i+1 < len(p); i += 2 {
			s += uint32(binary.BigEndian.Uint16(p[i:]))
		}
		if len(p)%2 == 1 {
			s += uint32(p[len(p)-1]) << 8
		}
	}
	add(ip[8:40])
	s += uint32(len(udp)) + 17
	add(udp)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	cs := ^uint16(s)
	if cs == 0 {
		cs = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], cs)
	return b, nil
}

func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
