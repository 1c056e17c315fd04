package stf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// CPUPort is the v1model port that punts packets to the slow path.
const CPUPort = 510

const maxPorts = 64

// Output is one packet that left the program.
type Output struct {
	Port int
	Data []byte
}

// Runner runs packets through a loaded XDP object.
type Runner struct {
	Coll *ebpf.Collection
	Prog *ebpf.Program
	RT   *tableruntime.Program
	Hook string // "xdp" or "tc"
	cpus int
	// runts: the program can run frames the kernel runs only padded
	// (p4_runt_test, packet.h)
	runts bool
	// send and closer replace the test-run path in live runs (LoadLive).
	send   func(port int, pkt []byte) (*Output, error)
	repl   *replState // multicast nodes and the punt-ring reader of copies (replicate.go)
	closer func()
}

type edgenfMD struct {
	Cube, InPort, IngressIfindex, Tenant, Mark, Pos, Hops, Pad uint32
	Hop                                                        [44]byte
}

type edgenfHop struct {
	Kind, Ifindex, Slot, Port uint32
	Nstack                    uint8
	Pad                       [3]uint8
	Stack                     [8]uint16
	Dir                       [8]uint8
}

type edgenfStats struct {
	RxPackets, RxBytes, TxPackets, TxBytes, DropPackets, DropBytes, PuntPackets, Pad uint64
}

// Load loads an XDP object built by p4.Compile with fresh maps and peers
// every port with the loopback interface.
func Load(object []byte, info *p4info.P4Info) (*Runner, error) {
	return LoadHook(object, info, "xdp")
}

// LoadHook is Load for the XDP ("xdp") or TC ("tc") object.
func LoadHook(object []byte, info *p4info.P4Info, hook string) (*Runner, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		return nil, err
	}
	setCopySlowPath(spec) // replicate.go
	runts := spec.Variables["p4_runt_test"] != nil && spec.Variables["p4_runt_test"].Set(uint32(1)) == nil
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogSizeStart: 1 << 20}})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) && os.Getenv("EDGENF_VERIFIER_LOG") != "" {
			os.WriteFile(os.Getenv("EDGENF_VERIFIER_LOG"), []byte(fmt.Sprintf("%+v", ve)), 0o644)
		}
		return nil, fmt.Errorf("loading the program: %w", err)
	}
	r := &Runner{Coll: coll, Prog: coll.Programs["edgenf_cube"], Hook: hook, runts: runts}
	if r.Prog == nil {
		coll.Close()
		return nil, fmt.Errorf("object has no edgenf_cube program")
	}
	r.RT, err = tableruntime.New(info, coll.Maps)
	if err != nil {
		coll.Close()
		return nil, err
	}
	r.cpus, err = ebpf.PossibleCPU()
	if err != nil {
		coll.Close()
		return nil, err
	}
	ports := coll.Maps["enf_ports"]
	for p := uint32(0); p < maxPorts; p++ {
		if err := ports.Update(p, edgenfHop{Kind: 1, Ifindex: 1}, ebpf.UpdateAny); err != nil {
			coll.Close()
			return nil, err
		}
	}
	return r, nil
}

// Close releases the program and maps.
func (r *Runner) Close() {
	r.repl.close()
	if r.closer != nil {
		r.closer()
		return
	}
	r.Coll.Close()
}

func (r *Runner) stats() ([]edgenfStats, error) {
	m := r.Coll.Maps["enf_stats"]
	out := make([]edgenfStats, maxPorts+1)
	for i := range out {
		var per []edgenfStats
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, err
		}
		for _, s := range per {
			out[i].TxPackets += s.TxPackets
			out[i].PuntPackets += s.PuntPackets
			out[i].DropPackets += s.DropPackets
		}
	}
	return out, nil
}

// runOnce feeds one packet arriving on inPort to the program with
// BPF_PROG_TEST_RUN: its verdict, the frame after it ran, and the counters
// before and after.
func (r *Runner) runOnce(inPort int, pkt []byte) (verdict uint32, out []byte, before, after []edgenfStats, err error) {
	md := make([]edgenfMD, r.cpus)
	for i := range md {
		md[i] = edgenfMD{InPort: uint32(inPort), IngressIfindex: 1}
	}
	if err = r.Coll.Maps["enf_scratch"].Update(uint32(0), md, ebpf.UpdateAny); err != nil {
		return
	}
	if before, err = r.stats(); err != nil {
		return
	}
	// The kernel runs no frame shorter than an Ethernet header (at either
	// hook, whatever the metadata), nor cuts one below it: a runt is padded
	// with zeros to 60 bytes, as a NIC pads what it sends, so that a
	// program may also take headers off it, and its real length goes with
	// it in the run's context (packet.h, p4_plen): the parser raises
	// error.PacketTooShort at the frame's end, as BMv2's does. The padding
	// is cut from the output.
	//
	// At TC the kernel also refuses (EINVAL) a frame whose EtherType says
	// IPv4 or IPv6 but which is shorter than that header (net/bpf/
	// test_run.c reads the addresses from the skb it builds): such a frame
	// runs padded the same way, the program still sees its real length.
	ro := &ebpf.RunOptions{Data: pkt, Repeat: 1}
	pad := 0
	var xdpOut xdpMD
	if short := r.kernelShort(pkt); short != "" {
		if !r.runts {
			err = fmt.Errorf("a frame of %d bytes: %s, which the kernel does not run unpadded at this hook, and this program cannot run padded frames (no p4_runt_test)", len(pkt), short)
			return
		}
		pad = runtPadded - len(pkt)
		frame := append(append([]byte(nil), pkt...), make([]byte, pad)...)
		if r.Hook == "xdp" {
			ro.Data = binary.NativeEndian.AppendUint32(nil, uint32(len(pkt)))
			ro.Data = append(ro.Data, frame...)
			ro.Context = xdpMD{Data: 4, DataEnd: uint32(len(ro.Data))}
			ro.ContextOut = &xdpOut
		} else {
			ro.Data = frame
			ro.Context = skbCtx{Cb: [5]uint32{uint32(len(pkt))}}
		}
	}
	ro.DataOut = make([]byte, len(ro.Data)+512)
	if verdict, err = r.Prog.Run(ro); err != nil {
		err = fmt.Errorf("BPF_PROG_TEST_RUN: %w", err)
		return
	}
	out = ro.DataOut
	if pad > 0 {
		// the frame starts after the metadata (the program may have added
		// some: the copy machine's) and ends before the padding
		md := int(xdpOut.Data)
		if md+pad > len(out) {
			err = fmt.Errorf("the program cut the padding of a %d-byte frame (%d bytes out)", len(pkt), len(out)-md)
			return
		}
		out = out[md : len(out)-pad]
	}
	after, err = r.stats()
	return verdict, out, before, after, err
}

// kernelShort says why BPF_PROG_TEST_RUN would refuse pkt as it is at
// r's hook, or "" when it runs it: a frame shorter than an Ethernet
// header (both hooks), or at TC an IPv4 or IPv6 EtherType with less than
// that header after it (the skb test run checks skb_headlen against
// struct iphdr or struct ipv6hdr).
func (r *Runner) kernelShort(pkt []byte) string {
	if len(pkt) < ethHlen {
		return "shorter than an Ethernet header"
	}
	if r.Hook == "xdp" {
		return ""
	}
	switch binary.BigEndian.Uint16(pkt[12:]) {
	case 0x0800:
		if len(pkt) < ethHlen+ipv4Hlen {
			return "EtherType 0x0800 with less than an IPv4 header"
		}
	case 0x86dd:
		if len(pkt) < ethHlen+ipv6Hlen {
			return "EtherType 0x86dd with less than an IPv6 header"
		}
	}
	return ""
}

// xdpMD is the kernel's struct xdp_md, the context of an XDP test run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// skbCtx is the head of the kernel's struct __sk_buff up to cb[], the
// context of a TC test run (the kernel zero-fills the rest).
type skbCtx struct {
	Len, PktType, Mark, QueueMapping, Protocol, VlanPresent, VlanTCI, VlanProto uint32
	Priority, IngressIfindex, Ifindex, TCIndex                                  uint32
	Cb                                                                          [5]uint32
}

const (
	ethHlen    = 14
	ipv4Hlen   = 20
	ipv6Hlen   = 40
	runtPadded = 60 // at least ethHlen + ipv6Hlen
)

// Send runs one packet arriving on inPort; it returns the output, or nil when
// the packet was dropped.
func (r *Runner) Send(inPort int, pkt []byte) (*Output, error) {
	if r.send != nil {
		return r.send(inPort, pkt)
	}
	verdict, out, before, after, err := r.runOnce(inPort, pkt)
	if err != nil {
		return nil, err
	}
	sent, dropped, passed := uint32(4), uint32(1), uint32(2) // XDP_REDIRECT, XDP_DROP, XDP_PASS
	if r.Hook == "tc" {
		sent, dropped, passed = 7, 2, 0 // TC_ACT_REDIRECT, TC_ACT_SHOT, TC_ACT_OK
	}
	for p := 0; p < maxPorts; p++ {
		if after[p].TxPackets > before[p].TxPackets {
			if verdict != sent {
				return nil, fmt.Errorf("port %d counted a send but the verdict is %d", p, verdict)
			}
			return &Output{Port: p, Data: out}, nil
		}
	}
	for p := 0; p <= maxPorts; p++ {
		if after[p].PuntPackets > before[p].PuntPackets {
			return &Output{Port: CPUPort, Data: out}, nil
		}
	}
	switch verdict {
	case dropped:
		return nil, nil
	case passed:
		return nil, fmt.Errorf("unexpected pass to the stack")
	}
	return nil, fmt.Errorf("unexpected verdict %d", verdict)
}

// Result is the outcome of an STF run.
type Result struct {
	Failures []string
	Outputs  []Output
	Warnings []string // the compiler's (RunFile)
}

// OK reports whether every check passed.
func (r *Result) OK() bool { return len(r.Failures) == 0 }

func (r *Result) Error() string { return strings.Join(r.Failures, "\n") }

// Run executes STF commands.
func (r *Runner) Run(name string, cmds []*Cmd) (*Result, error) {
	res := &Result{}
	fail := func(c *Cmd, format string, args ...any) {
		res.Failures = append(res.Failures, fmt.Sprintf("%s:%d: %s", name, c.Line, fmt.Sprintf(format, args...)))
	}
	expects := map[int][]*Cmd{}
	outputs := map[int][]Output{}
	outLine := map[int][]int{}
	var lastOut *Output
	lastWasPacket := false
	order := uint32(1 << 30)
	for _, c := range cmds {
		switch c.Kind {
		case "packet":
			outs, err := r.SendAll(c.Port, c.Data) // replicate.go: every copy
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
			lastOut, lastWasPacket = nil, true
			for i := range outs {
				o := &outs[i]
				lastOut = o
				outputs[o.Port] = append(outputs[o.Port], *o)
				outLine[o.Port] = append(outLine[o.Port], c.Line)
				res.Outputs = append(res.Outputs, *o)
			}
			continue
		case "mc_mgrp_create", "mc_mgrp_destroy", "mc_node_create", "mc_node_update", "mc_node_destroy",
			"mc_node_associate", "mc_node_dissociate", "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mirroring_get":
			if err := r.replCmd(c); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "act_prof_create_member", "act_prof_modify_member", "act_prof_delete_member", "act_prof_create_group",
			"act_prof_delete_group", "act_prof_add_member_to_group", "act_prof_remove_member_from_group":
			if err := r.actProfCmd(c); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "expect":
			expects[c.Port] = append(expects[c.Port], c)
		case "no_packet":
			if !lastWasPacket {
				fail(c, "no_packet must follow a packet")
			} else if lastOut != nil {
				fail(c, "expected no packet, got one on port %d: %x", lastOut.Port, lastOut.Data)
			}
		case "add":
			prio := c.EntryPriority()
			if c.Priority < 0 {
				prio = order
				order--
			}
			if err := r.addEntry(c, prio); err != nil { // actprof.go
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "setdefault":
			if err := r.setDefault(c); err != nil { // actprof.go
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "check_counter":
			pk, by, err := r.RT.ReadCounter(c.Counter, c.Index)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
			v := pk
			if c.Field == "bytes" {
				v = by
			}
			if !compare(v, c.Op, c.Value) {
				fail(c, "counter %s(%d) %s = %d, want %s %d", c.Counter, c.Index, c.Field, v, c.Op, c.Value)
			}
		case "direct_meter_set":
			prio := c.EntryPriority()
			cfg := &tableruntime.MeterConfig{CIR: c.Rates[0], CBurst: c.Rates[1], PIR: c.Rates[2], PBurst: c.Rates[3]}
			if err := r.RT.SetDirectMeter(c.Table, c.Matches, prio, cfg); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "meter_set":
			cfg := &tableruntime.MeterConfig{CIR: c.Rates[0], CBurst: c.Rates[1], PIR: c.Rates[2], PBurst: c.Rates[3]}
			lo, hi := c.Index, c.Index
			if m := r.RT.Model.Meter(c.Meter); c.AllCells && m != nil {
				lo, hi = 0, uint32(m.Size-1)
			}
			if err := r.RT.SetMeter(c.Meter, lo, hi, cfg); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "meter_get":
			if _, err := r.RT.ReadMeter(c.Meter, c.Index); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "register_reset":
			reg := r.RT.Model.Register(c.Register)
			if reg == nil {
				return nil, fmt.Errorf("%s:%d: no register %q", name, c.Line, c.Register)
			}
			if err := r.RT.ResetRegister(c.Register, 0, uint32(reg.Size-1)); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
		case "register_write", "register_read":
			reg := r.RT.Model.Register(c.Register)
			if reg == nil {
				return nil, fmt.Errorf("%s:%d: no register %q", name, c.Line, c.Register)
			}
			want := c.Value
			if reg.Width < 64 {
				want &= 1<<uint(reg.Width) - 1
			}
			if c.Kind == "register_write" {
				if err := r.RT.WriteRegister(c.Register, c.Index, c.Index, want); err != nil {
					return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
				}
				break
			}
			got, err := r.RT.ReadRegister(c.Register, c.Index, c.Index)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, c.Line, err)
			}
			if !c.NoCheck && got[0] != want {
				fail(c, "register %s[%d] = %d, want %d", c.Register, c.Index, got[0], want)
			}
		case "wait":
		}
		lastWasPacket = false
	}
	ports := map[int]bool{}
	for p := range expects {
		ports[p] = true
	}
	for p := range outputs {
		ports[p] = true
	}
	for p := range ports {
		ex, got := expects[p], outputs[p]
		for i := 0; i < len(ex) || i < len(got); i++ {
			switch {
			case i >= len(got):
				fail(ex[i], "expected a packet on port %d, none came", p)
			case i >= len(ex):
				res.Failures = append(res.Failures, fmt.Sprintf("%s:%d: unexpected packet on port %d: %x", name, outLine[p][i], p, got[i].Data))
			default:
				if msg := match(ex[i], got[i].Data); msg != "" {
					fail(ex[i], "port %d: %s", p, msg)
				}
			}
		}
	}
	return res, nil
}

func compare(v uint64, op string, want uint64) bool {
	switch op {
	case "==":
		return v == want
	case "!=":
		return v != want
	case "<":
		return v < want
	case ">":
		return v > want
	case "<=":
		return v <= want
	case ">=":
		return v >= want
	}
	return false
}

func match(c *Cmd, got []byte) string {
	if len(got) < len(c.Data) || (c.Exact && len(got) != len(c.Data)) {
		return fmt.Sprintf("length %d, want %d%s\n  got  %x\n  want %x", len(got), len(c.Data), map[bool]string{true: " exactly"}[c.Exact], got, c.Data)
	}
	for i := range c.Data {
		if got[i]&c.Mask[i] != c.Data[i]&c.Mask[i] {
			return fmt.Sprintf("byte %d differs\n  got  %x\n  want %x", i, got, c.Data)
		}
	}
	return ""
}
