package datapath

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// Verdicts as the kernel returns them, per hook.
const (
	XDPAborted  = 0
	XDPDrop     = 1
	XDPPass     = 2
	XDPTx       = 3
	XDPRedirect = 4

	TCActOK       = 0
	TCActShot     = 2
	TCActRedirect = 7
)

// RunResult is what one packet did in BPF_PROG_TEST_RUN.
type RunResult struct {
	Verdict uint32 // XDP_* or TC_ACT_*
	Port    int    // port of the cube it was sent out of, -1 if none
	Data    []byte // the frame after the program ran
	// Priority is skb->priority after the run (TC only): the class an
	// egress qdisc puts the frame in.
	Priority uint32
	// Tstamp is skb->tstamp after the run (TC only): an Earliest
	// Departure Time, for sch_fq.
	Tstamp uint64
}

// skbCtx is struct __sk_buff as BPF_PROG_TEST_RUN takes and returns it
// (192 bytes).
type skbCtx [48]uint32

// skbPriority and skbTstamp are the indexes of its priority field and of
// the low half of tstamp.
const (
	skbPriority = 8
	skbTstamp   = 38
)

// Sent reports whether the frame left through a port.
func (r RunResult) Sent() bool { return r.Port >= 0 }

// Run feeds one frame to cube c as if it arrived on inPort, with
// BPF_PROG_TEST_RUN. The output port is found from the cube's tx counters, so
// it works for any NF without instrumentation. Not for concurrent use on one
// datapath.
func (d *Datapath) Run(c *Program, inPort uint32, frame []byte) (RunResult, error) {
	res := RunResult{Port: -1}
	if err := d.SetMetadata(Metadata{Cube: c.Slot, InPort: inPort, IngressIfindex: 1}); err != nil {
		return res, err
	}
	before, err := c.Stats()
	if err != nil {
		return res, err
	}
	out := make([]byte, len(frame)+512)
	ro := &ebpf.RunOptions{Data: frame, DataOut: out}
	var skb skbCtx
	if c.Hook == TC {
		ro.Context, ro.ContextOut = skb, &skb
	}
	v, err := c.prog.Run(ro)
	if err != nil {
		return res, fmt.Errorf("test run: %w", err)
	}
	res.Verdict = v
	after, err := c.Stats()
	if err != nil {
		return res, err
	}
	for p := 0; p < MaxPorts; p++ {
		if after[p].TxPackets > before[p].TxPackets {
			res.Port = p
			break
		}
	}
	res.Data = ro.DataOut
	res.Priority = skb[skbPriority]
	res.Tstamp = uint64(skb[skbTstamp]) | uint64(skb[skbTstamp+1])<<32
	return res, nil
}

// SetMetadata writes md into the scratch slot of every CPU.
func (d *Datapath) SetMetadata(md Metadata) error {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	vals := make([]Metadata, cpus)
	for i := range vals {
		vals[i] = md
	}
	return d.scratch.Update(uint32(0), vals, ebpf.UpdateAny)
}

// Entry loads the program a frame arriving on a peered interface runs first,
// unattached, starting the given hop: the framework's ingress stub, or with
// direct the direct entry of that cube (the hop must start with it). The hop
// is the loopback interface's (ifindex 1), where BPF_PROG_TEST_RUN puts a
// frame given no interface. For tests and benchmarks (each run resets the
// metadata as real traffic does). The caller closes the program.
func (d *Datapath) Entry(hook Hook, hop Hop, direct *Program) (*ebpf.Program, error) {
	spec, err := stubSpec(hook)
	if err != nil {
		return nil, err
	}
	repl := d.prepare(spec, hook)
	for _, ms := range spec.Maps {
		ms.Pinning = ebpf.PinNone
	}
	for n := range repl {
		if _, ok := spec.Maps[n]; !ok {
			delete(repl, n)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, err
	}
	defer coll.Close()
	set := &ifaceSet{maps: map[string]*ebpf.Map{}}
	for _, n := range ifaceMapNames {
		set.maps[n] = coll.Maps[n]
	}
	const lo = 1
	if err := set.write(1, lo, hop); err != nil {
		return nil, err
	}
	if direct != nil {
		return d.loadEntry(direct, set.maps)
	}
	return coll.Programs[stubProgram].Clone()
}
