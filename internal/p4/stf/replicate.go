package stf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"

	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// Replication in STF runs: BMv2's multicast (mc_*) and mirroring
// (mirroring_*) commands, and SendAll, which returns every copy a packet
// makes. In test runs the program is loaded with p4_copy_slowpath set, so
// the copies that are not the packet itself come out through the punt ring
// (at both hooks); the last copy is the test run's output frame.

// replState is the BMv2 pre state of a runner: nodes (rid + ports, by
// handle, numbered from 0 as simple_switch does) and their groups.
type replState struct {
	nodes  map[uint64]*mcNode
	next   uint64
	groups map[uint64][]uint64 // group -> node handles
	rd     *perf.Reader
	live   *live     // live runs (replicate_live.go)
	lr     *liveRepl // their slow path
}

func newReplState() *replState {
	return &replState{nodes: map[uint64]*mcNode{}, groups: map[uint64][]uint64{}}
}

type mcNode struct {
	rid   uint16
	ports []uint16
}

func parseRepl(c *Cmd, f []string) error {
	want := map[string]int{"mc_mgrp_create": 1, "mc_mgrp_destroy": 1, "mc_node_destroy": 1, "mc_node_associate": 2,
		"mc_node_dissociate": 2, "mirroring_add": 2, "mirroring_add_mc": 2, "mirroring_delete": 1, "mirroring_get": 1}
	args := f[1:]
	if n, ok := want[c.Kind]; ok && len(args) != n {
		return fmt.Errorf("%s takes %d arguments, got %d", c.Kind, n, len(args))
	}
	if (c.Kind == "mc_node_create" || c.Kind == "mc_node_update") && len(args) < 1 {
		return fmt.Errorf("%s <rid|node> <port>...", c.Kind)
	}
	for _, a := range args {
		v, err := strconv.ParseUint(a, 0, 32)
		if err != nil {
			return fmt.Errorf("%s: bad number %q", c.Kind, a)
		}
		c.Nums = append(c.Nums, v)
	}
	return nil
}

func (r *Runner) replCmd(c *Cmd) error {
	if r.repl == nil {
		r.repl = newReplState()
	}
	st := r.repl
	n := c.Nums
	writeGroup := func(g uint64) error {
		var reps []tableruntime.Replica
		for _, h := range st.groups[g] {
			nd := st.nodes[h]
			for _, p := range nd.ports {
				reps = append(reps, tableruntime.Replica{Port: p, Rid: nd.rid})
			}
		}
		return r.RT.SetMcastGroup(uint32(g), reps)
	}
	ports := func(a []uint64) ([]uint16, error) {
		var out []uint16
		for _, p := range a {
			if !tableruntime.ValidPort(uint32(p)) {
				return nil, fmt.Errorf("port %d: ports are 0..%d or %d", p, tableruntime.MaxPort, tableruntime.CPUPort)
			}
			out = append(out, uint16(p))
		}
		return out, nil
	}
	switch c.Kind {
	case "mc_mgrp_create":
		if _, ok := st.groups[n[0]]; ok {
			return fmt.Errorf("multicast group %d exists", n[0])
		}
		st.groups[n[0]] = nil
		return writeGroup(n[0])
	case "mc_mgrp_destroy":
		delete(st.groups, n[0])
		return r.RT.DeleteMcastGroup(uint32(n[0]))
	case "mc_node_create":
		ps, err := ports(n[1:])
		if err != nil {
			return err
		}
		st.nodes[st.next] = &mcNode{rid: uint16(n[0]), ports: ps}
		st.next++
		return nil
	case "mc_node_update":
		nd := st.nodes[n[0]]
		if nd == nil {
			return fmt.Errorf("no multicast node %d", n[0])
		}
		ps, err := ports(n[1:])
		if err != nil {
			return err
		}
		nd.ports = ps
		for g, hs := range st.groups {
			for _, h := range hs {
				if h == n[0] {
					if err := writeGroup(g); err != nil {
						return err
					}
				}
			}
		}
		return nil
	case "mc_node_destroy":
		delete(st.nodes, n[0])
		return nil
	case "mc_node_associate", "mc_node_dissociate":
		hs, ok := st.groups[n[0]]
		if !ok {
			return fmt.Errorf("no multicast group %d", n[0])
		}
		if st.nodes[n[1]] == nil {
			return fmt.Errorf("no multicast node %d", n[1])
		}
		var keep []uint64
		for _, h := range hs {
			if h != n[1] {
				keep = append(keep, h)
			}
		}
		if c.Kind == "mc_node_associate" {
			keep = append(keep, n[1])
		}
		st.groups[n[0]] = keep
		return writeGroup(n[0])
	case "mirroring_add":
		return r.RT.SetCloneSession(uint32(n[0]), tableruntime.CloneSession{Port: uint16(n[1])})
	case "mirroring_add_mc":
		return r.RT.SetCloneSession(uint32(n[0]), tableruntime.CloneSession{McastGroup: uint16(n[1])})
	case "mirroring_delete":
		return r.RT.DeleteCloneSession(uint32(n[0]))
	case "mirroring_get":
		// BMv2's CLI prints the session; a test fails on one that is missing
		ss, err := r.RT.CloneSessions()
		if err != nil {
			return err
		}
		if _, ok := ss[uint32(n[0])]; !ok {
			return fmt.Errorf("mirroring_get: no clone session %d", n[0])
		}
		return nil
	}
	return fmt.Errorf("unknown command %s", c.Kind)
}

// setCopySlowPath makes a replicating program send its copies through the
// punt ring, where test runs can read them.
func setCopySlowPath(spec *ebpf.CollectionSpec) {
	if v, ok := spec.Variables["p4_copy_slowpath"]; ok {
		_ = v.Set(uint32(1))
	}
}

// SendAll runs one packet and returns every packet that left the program:
// the copies in the order they were made, then the packet itself.
func (r *Runner) SendAll(inPort int, pkt []byte) ([]Output, error) {
	if r.repl != nil && r.repl.live != nil && r.RT != nil && r.RT.Replicates() {
		return r.repl.live.sendAll(r.repl, inPort, pkt)
	}
	if r.send != nil || r.RT == nil || !r.RT.Replicates() {
		o, err := r.Send(inPort, pkt)
		if err != nil || o == nil {
			return nil, err
		}
		return []Output{*o}, nil
	}
	if r.repl == nil {
		r.repl = newReplState()
	}
	if r.repl.rd == nil {
		rd, err := perf.NewReader(r.Coll.Maps["enf_punt_ring"], 16*os.Getpagesize())
		if err != nil {
			return nil, fmt.Errorf("punt ring: %w", err)
		}
		r.repl.rd = rd
	}
	verdict, outBuf, before, after, err := r.runOnce(inPort, pkt)
	if err != nil {
		return nil, err
	}
	var outs []Output
	copies := map[int]uint64{}
	punts := 0
	for {
		r.repl.rd.SetDeadline(time.Now())
		rec, err := r.repl.rd.Read()
		if err != nil {
			break
		}
		var hdr datapath.PuntHeader
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.LittleEndian, &hdr); err != nil || hdr.Magic != datapath.PuntMagic {
			continue
		}
		frame := rec.RawSample[binary.Size(hdr):]
		if l := int(min(hdr.PktLen, datapath.PuntSnaplen)); len(frame) > l {
			frame = frame[:l]
		}
		frame = append([]byte(nil), frame...)
		switch hdr.Reason {
		case datapath.PuntTransmit:
			copies[int(hdr.Arg)]++
			outs = append(outs, Output{Port: int(hdr.Arg), Data: frame})
		case 1: // packet-in: a copy to the CPU port, or the packet itself
			punts++
			outs = append(outs, Output{Port: CPUPort, Data: frame})
		}
	}
	sent := uint32(4) // XDP_REDIRECT
	if r.Hook == "tc" {
		sent = 7 // TC_ACT_REDIRECT
	}
	if verdict == sent {
		for p := 0; p < maxPorts; p++ {
			if after[p].TxPackets-before[p].TxPackets > copies[p] {
				outs = append(outs, Output{Port: p, Data: outBuf})
				break
			}
		}
	}
	_ = punts
	return outs, nil
}

func (s *replState) close() {
	if s != nil && s.rd != nil {
		s.rd.Close()
	}
	if s != nil && s.lr != nil {
		s.lr.close()
	}
}
