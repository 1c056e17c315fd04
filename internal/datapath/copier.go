package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The copy machine (bpf/include/edgenf/copy.h): XDP programs cannot copy a
// frame, so they record its copies in a per-CPU ring and pass the frame up
// with the slot named in its data_meta; edgenf_copier, first at TCX ingress
// of the same interface, makes the copies. It goes on every interface that
// runs XDP stubs or entries, and on the injector.

const copierPin = "copier_link"

// CopyRing, CopyMax and CopyHdr mirror EDGENF_COPY_RING (slots per CPU),
// EDGENF_COPY_MAX (copies recorded per packet) and EDGENF_COPY_HDR (header
// bytes of a recorded copy).
const (
	CopyRing = 128
	CopyMax  = 32
	CopyHdr  = 128
)

// copyCPU mirrors struct edgenf_copy_cpu.
type copyCPU struct {
	Next, Seq, Active, Slot, ASeq, Pad uint32
	Stale, Failed                      uint64
}

// CopyStats are the copy machine's counters, summed over the CPUs.
type CopyStats struct {
	// Stale: frames whose ring slot had been overwritten before they
	// reached TC (dropped with their copies).
	Stale uint64 `json:"stale"`
	// Failed: copies the copy machine could not make.
	Failed uint64 `json:"failed"`
}

// CopyStats reads the copy machine's counters.
func (d *Datapath) CopyStats() (CopyStats, error) {
	var per []copyCPU
	if err := d.copies[mapCopyCPU].Lookup(uint32(0), &per); err != nil {
		return CopyStats{}, err
	}
	var s CopyStats
	for _, c := range per {
		s.Stale += c.Stale
		s.Failed += c.Failed
	}
	return s, nil
}

// attachCopier puts the copy machine first at TCX ingress of ifindex (once:
// the link is pinned in dir) and tells the XDP programs it is there.
func (d *Datapath) attachCopier(dir string, ifindex int) error {
	lpath := filepath.Join(dir, copierPin)
	if l, err := link.LoadPinnedLink(lpath, nil); err == nil {
		info, err := l.Info()
		if err == nil && info.TCX() != nil && info.TCX().Ifindex == uint32(ifindex) {
			// an earlier daemon's copy machine: it may read maps this
			// one renewed (framework.go), so it runs this daemon's
			err := d.currentCopier(l, info.Program)
			l.Close()
			if err != nil {
				return err
			}
			return d.copies[mapCopyDevs].Update(uint32(ifindex), uint32(1), ebpf.UpdateAny)
		}
		// the interface it was on is gone (or was another one)
		l.Unpin()
		l.Close()
	}
	if d.classicTC {
		if f, err := d.classicFilter(ifindex, Ingress, roleCopier); err == nil && f != nil {
			prog, err := d.copierProgram()
			if err != nil {
				return err
			}
			if info, err := prog.Info(); err == nil {
				if id, ok := info.ID(); ok && int(id) != f.Id { // an earlier daemon's
					if err := d.attachClassic(ifindex, Ingress, roleCopier, prog); err != nil {
						return fmt.Errorf("attach the copy machine: %w", err)
					}
				}
			}
			return d.copies[mapCopyDevs].Update(uint32(ifindex), uint32(1), ebpf.UpdateAny)
		}
	}
	prog, err := d.copierProgram()
	if err != nil {
		return err
	}
	if d.classicTC {
		if err := d.attachClassic(ifindex, Ingress, roleCopier, prog); err != nil {
			return fmt.Errorf("attach the copy machine: %w", err)
		}
		return d.copies[mapCopyDevs].Update(uint32(ifindex), uint32(1), ebpf.UpdateAny)
	}
	l, err := link.AttachTCX(link.TCXOptions{Program: prog, Interface: ifindex, Attach: ebpf.AttachTCXIngress, Anchor: link.Head()})
	if err != nil {
		return fmt.Errorf("attach the copy machine: %w", err)
	}
	defer l.Close()
	if err := l.Pin(lpath); err != nil {
		l.Close()
		return err
	}
	return d.copies[mapCopyDevs].Update(uint32(ifindex), uint32(1), ebpf.UpdateAny)
}

// currentCopier makes the pinned link l, running program id, run this
// datapath's copy machine.
func (d *Datapath) currentCopier(l link.Link, id ebpf.ProgramID) error {
	prog, err := d.copierProgram()
	if err != nil {
		return err
	}
	info, err := prog.Info()
	if err != nil {
		return err
	}
	if cur, ok := info.ID(); ok && cur == id {
		return nil
	}
	if err := l.Update(prog); err != nil {
		return fmt.Errorf("update the copy machine: %w", err)
	}
	return nil
}

// copierProgram is the copy machine's program, loaded once per datapath:
// it uses only the shared maps, so one program serves every interface, and
// a pod's interface does not wait for the verifier (a third of a pod's
// plugging time before).
func (d *Datapath) copierProgram() (*ebpf.Program, error) {
	d.copierMu.Lock()
	defer d.copierMu.Unlock()
	if d.copier != nil {
		return d.copier, nil
	}
	spec, err := LoadSpec(stubTC)
	if err != nil {
		return nil, err
	}
	for n := range spec.Programs {
		if n != "edgenf_copier" && n != "enf_copy_one" {
			delete(spec.Programs, n)
		}
	}
	// the object's other maps (the stub's) are not the copy machine's
	used := map[string]bool{}
	for _, p := range spec.Programs {
		for _, ins := range p.Instructions {
			used[ins.Reference()] = true
		}
	}
	for n := range spec.Maps {
		switch {
		case !used[n]:
			delete(spec.Maps, n)
		case !isShared(n) && !isSection(n):
			return nil, fmt.Errorf("the copy machine uses map %s, not one of the shared ones: it cannot be one program for every interface", n)
		}
	}
	coll, err := d.loadCollection(spec, TC, d.root, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("load the copy machine: %w", err)
	}
	defer coll.Close()
	if d.copier = coll.DetachProgram("edgenf_copier"); d.copier == nil {
		return nil, errors.New("stub object has no edgenf_copier")
	}
	return d.copier, nil
}

// detachCopier removes the copy machine pinned in dir, if any.
func (d *Datapath) detachCopier(dir string) {
	lpath := filepath.Join(dir, copierPin)
	l, err := link.LoadPinnedLink(lpath, nil)
	if err != nil {
		return
	}
	if info, err := l.Info(); err == nil {
		if tcx := info.TCX(); tcx != nil {
			d.copies[mapCopyDevs].Delete(uint32(tcx.Ifindex))
		}
	}
	l.Unpin()
	l.Close()
	os.Remove(lpath)
}

// copyRec and copySlot mirror struct edgenf_copy and struct
// edgenf_copy_slot.
type copyRec struct {
	HLen, Trunc uint32
	Hop         Hop
	Hdr         [CopyHdr]byte
}

type copySlot struct {
	Seq, N, PLen, Pad uint32
	C                 [CopyMax]copyRec
}

// RecordedCopy is a copy an XDP program recorded for the copy machine.
type RecordedCopy struct {
	Hop    Hop
	Header []byte // the copy's header bytes, in front of the shared payload
	Trunc  uint32 // cut to this length (0: whole)
}

// CopySlot is one slot of a CPU's copy ring.
type CopySlot struct {
	Seq     uint32
	Payload uint32 // payload bytes the copies share
	Copies  []RecordedCopy
}

// CopySlots reads slot idx of every CPU's copy ring (tests, debugging).
func (d *Datapath) CopySlots(idx uint32) ([]CopySlot, error) {
	var per []copySlot
	if err := d.copies[mapCopyRing].Lookup(idx, &per); err != nil {
		return nil, err
	}
	out := make([]CopySlot, len(per))
	for i, s := range per {
		out[i] = CopySlot{Seq: s.Seq, Payload: s.PLen}
		for j := 0; j < int(min(s.N, CopyMax)); j++ {
			c := s.C[j]
			out[i].Copies = append(out[i].Copies, RecordedCopy{Hop: c.Hop, Header: append([]byte(nil), c.Hdr[:min(c.HLen, CopyHdr)]...), Trunc: c.Trunc})
		}
	}
	return out, nil
}

// MarkCopier tells the XDP programs whether frames arriving on ifindex
// reach the copy machine (attachCopier does it for real interfaces; tests
// that run programs unattached say it themselves).
func (d *Datapath) MarkCopier(ifindex int, on bool) error {
	if !on {
		err := d.copies[mapCopyDevs].Delete(uint32(ifindex))
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		return err
	}
	return d.copies[mapCopyDevs].Update(uint32(ifindex), uint32(1), ebpf.UpdateAny)
}
