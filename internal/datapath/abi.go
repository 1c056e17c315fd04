// Package datapath loads, pins, attaches and wires the eBPF side of edgenf:
// the patch panels, cube programs and their maps, the stubs on Linux
// interfaces, counters and the punt channel.
package datapath

import "fmt"

// Limits and layouts mirrored from bpf/include/edgenf/types.h.
const (
	MaxPorts    = 64
	MaxStack    = 8
	MaxSlots    = 16384
	PuntMagic   = 0x65646766
	PuntSnaplen = 1536
	// PuntTransmit is the punt reason of copies the fast path could not
	// make itself (copy.h): the slow path sends the frame out of port Arg.
	PuntTransmit = 0xfffffff0
)

// Hook is the kernel hook a cube runs at.
type Hook string

const (
	XDP Hook = "xdp"
	TC  Hook = "tc"
)

// ParseHook accepts "xdp" or "tc".
func ParseHook(s string) (Hook, error) {
	switch Hook(s) {
	case XDP, TC:
		return Hook(s), nil
	case "":
		return XDP, nil
	}
	return "", fmt.Errorf("unknown hook %q (want xdp or tc)", s)
}

// DstKind is where a hop ends.
type DstKind uint32

const (
	DstNone  DstKind = 0 // unpeered: drop
	DstIface DstKind = 1 // redirect out of a Linux interface
	DstCube  DstKind = 2 // tail-call a cube port
	DstStack DstKind = 3 // hand to the Linux stack
)

// Direction a transparent cube sees a packet in.
type Direction uint8

const (
	Ingress Direction = 0
	Egress  Direction = 1
)

func (d Direction) String() string {
	if d == Egress {
		return "egress"
	}
	return "ingress"
}

// Hop mirrors struct edgenf_hop.
type Hop struct {
	Kind    DstKind
	Ifindex uint32
	Slot    uint32
	Port    uint32
	NStack  uint8
	_       [3]uint8
	Stack   [MaxStack]uint16
	Dir     [MaxStack]Direction
}

// First is the panel slot of the cube the hop runs first, or MaxSlots when
// it runs none (it ends at an interface or the Linux stack).
func (h Hop) First() uint32 {
	switch {
	case h.NStack > 0:
		return uint32(h.Stack[0])
	case h.Kind == DstCube:
		return h.Slot
	}
	return MaxSlots
}

// Transparent is one transparent cube run on a hop.
type Transparent struct {
	Slot uint32
	Dir  Direction
}

// NewHop builds a hop that runs stack first, then ends at kind.
func NewHop(kind DstKind, ifindex, slot, port uint32, stack []Transparent) (Hop, error) {
	h := Hop{Kind: kind, Ifindex: ifindex, Slot: slot, Port: port}
	if len(stack) > MaxStack {
		return h, fmt.Errorf("%d transparent cubes on one path, at most %d", len(stack), MaxStack)
	}
	h.NStack = uint8(len(stack))
	for i, t := range stack {
		h.Stack[i] = uint16(t.Slot)
		h.Dir[i] = t.Dir
	}
	return h, nil
}

// Metadata mirrors struct edgenf_md.
type Metadata struct {
	Cube           uint32
	InPort         uint32
	IngressIfindex uint32
	Tenant         uint32
	Mark           uint32
	Pos            uint32
	Hops           uint32
	Priority       uint32
	Hop            Hop
}

// Stats mirrors struct edgenf_stats; the daemon sums the per-CPU values.
type Stats struct {
	RxPackets   uint64 `json:"rx_packets"`
	RxBytes     uint64 `json:"rx_bytes"`
	TxPackets   uint64 `json:"tx_packets"`
	TxBytes     uint64 `json:"tx_bytes"`
	DropPackets uint64 `json:"drop_packets"`
	DropBytes   uint64 `json:"drop_bytes"`
	PuntPackets uint64 `json:"punt_packets"`
	// PuntRateDrops are the punts the cube's punt budget held back
	// (Program.SetPuntBudget): never sent to the slow path.
	PuntRateDrops uint64 `json:"punt_rate_drops"`
}

// Add accumulates o into s.
func (s *Stats) Add(o Stats) {
	s.RxPackets += o.RxPackets
	s.RxBytes += o.RxBytes
	s.TxPackets += o.TxPackets
	s.TxBytes += o.TxBytes
	s.DropPackets += o.DropPackets
	s.DropBytes += o.DropBytes
	s.PuntPackets += o.PuntPackets
	s.PuntRateDrops += o.PuntRateDrops
}

// PuntBudget mirrors struct edgenf_punt_budget: a cube's punt budget as
// the fast path keeps it (a rate's interval and a burst, in ns).
type PuntBudget struct {
	TAT      uint64
	Interval uint64
	Burst    uint64
	_        uint64
}

// NewPuntBudget is the budget of rate punts a second with bursts of burst
// punts; rate 0 lets none through, and unlimited any number.
func NewPuntBudget(rate, burst uint64, unlimited bool) PuntBudget {
	switch {
	case unlimited:
		return PuntBudget{}
	case rate == 0 || burst == 0:
		return PuntBudget{Interval: 1e9} // burst 0: nothing fits
	}
	iv := max(uint64(1e9)/rate, 1)
	return PuntBudget{Interval: iv, Burst: burst * iv}
}

// Config mirrors struct edgenf_config: settings of the whole datapath.
type Config struct {
	InjectIfindex uint32
	_             [3]uint32
}

// PuntHeader mirrors struct edgenf_punt_hdr.
type PuntHeader struct {
	Magic   uint32
	Cube    uint32
	InPort  uint32
	Reason  uint32
	Arg     uint32
	PktLen  uint32
	Ifindex uint32
	Hook    uint32
}
