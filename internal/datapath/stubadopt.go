package datapath

// A restart adopts the program on each interface instead of loading it
// again: a stub load is a verifier run, a direct entry one more, and each
// link update waits for an RCU grace period (8–24 ms), so a node with a
// hundred peered interfaces spent seconds re-attaching what was already
// there. What an attach put on the interface is recorded beside its link;
// the next attach that would put the same thing there writes the hop only.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// attachedPin is the pinned one-slot array (attachRecord) in a stub
// directory. A hyphen cannot occur in an object's map name.
const attachedPin = "enf-attached"

// attachRecord says what an interface's link runs: the program, the cube
// whose direct entry it is (0: the stub), the framework maps it was loaded
// over, the interface maps (Hops: their enf_if_hops) and the stub object it
// was loaded with, and the interface's slot in them. All of it must be what
// the attaching daemon would load for the link to be adopted: the cube's
// program id is the same only when the engine adopted the cube (same
// object, same configuration), the maps' only when no renewal came in
// between. The shared stub's own record (ifaces.go) has no cube and slot.
type attachRecord struct {
	Prog, Cube, Panel, Scratch, Hops uint32
	Slot, Ifindex                    uint32
	Object                           [32]byte
}

const attachRecordSize = 60

var stubDigest = struct {
	sync.Once
	byHook map[Hook][32]byte
}{}

// stubObjectDigest identifies the stub object of hook this build embeds.
func stubObjectDigest(hook Hook) [32]byte {
	stubDigest.Do(func() {
		stubDigest.byHook = map[Hook][32]byte{XDP: sha256.Sum256(stubXDP), TC: sha256.Sum256(stubTC)}
	})
	return stubDigest.byHook[hook]
}

func progID(p *ebpf.Program) uint32 {
	if p == nil {
		return 0
	}
	info, err := p.Info()
	if err != nil {
		return 0
	}
	id, _ := info.ID()
	return uint32(id)
}

func mapID(m *ebpf.Map) uint32 {
	info, err := m.Info()
	if err != nil {
		return 0
	}
	id, _ := info.ID()
	return uint32(id)
}

// wantRecord is what an attach of prog (direct: the cube whose entry it
// is) records, prog's id, hop maps and slot left for the caller.
func (d *Datapath) wantRecord(hook Hook, direct *Program) attachRecord {
	r := attachRecord{Panel: mapID(d.panels[hook]), Scratch: mapID(d.scratch), Object: stubObjectDigest(hook)}
	if direct != nil {
		r.Cube = progID(direct.prog)
	}
	return r
}

// record is what s's attach of prog (direct: the cube whose entry) records.
func (s *Stub) record(hook Hook, direct *Program, prog *ebpf.Program) attachRecord {
	r := s.set.d.wantRecord(hook, direct)
	r.Prog, r.Hops, r.Slot, r.Ifindex = progID(prog), mapID(s.set.maps[mapIfHops]), s.slot, s.ifindex
	return r
}

// recordAttached pins r beside the link of sdir.
func recordAttached(sdir string, r attachRecord) error {
	if err := clearAttached(sdir); err != nil {
		return err
	}
	return writeRecord(filepath.Join(sdir, attachedPin), r)
}

// writeRecord pins r at path.
func writeRecord(path string, r attachRecord) error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "enf_attached", Type: ebpf.Array, KeySize: 4, ValueSize: attachRecordSize, MaxEntries: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Put(uint32(0), r); err != nil {
		return err
	}
	return m.Pin(path)
}

// clearAttached removes the record before the link changes: a daemon
// stopped half way leaves none, and the next start attaches again.
func clearAttached(sdir string) error {
	if err := os.Remove(filepath.Join(sdir, attachedPin)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear the record of what %s runs: %w", sdir, err)
	}
	return nil
}

func readAttached(sdir string) (attachRecord, bool) {
	return readRecord(filepath.Join(sdir, attachedPin))
}

// readRecord reads the record pinned at path; an earlier release's (of
// another size) reads as none.
func readRecord(path string) (attachRecord, bool) {
	var r attachRecord
	m, err := ebpf.LoadPinnedMap(path, nil)
	if err != nil {
		return r, false
	}
	defer m.Close()
	if m.ValueSize() != attachRecordSize || m.Lookup(uint32(0), &r) != nil {
		return r, false
	}
	return r, true
}

// runsRecorded says whether the link pinned in sdir is on ifindex and
// runs, by the record beside it, what an attach of direct's entry (nil:
// the stub) at hook would put there over set's maps; it returns the
// record.
func (d *Datapath) runsRecorded(sdir string, ifindex int, set *ifaceSet, direct *Program) (attachRecord, bool) {
	have, ok := readAttached(sdir)
	if !ok {
		return have, false
	}
	want := d.wantRecord(set.hook, direct)
	want.Prog, want.Slot, want.Ifindex, want.Hops = have.Prog, have.Slot, uint32(ifindex), mapID(set.maps[mapIfHops])
	if have != want || want.Panel == 0 || want.Scratch == 0 || direct != nil && want.Cube == 0 ||
		direct == nil && have.Prog != progID(set.stub) || !set.holds(have.Slot, have.Ifindex) {
		return have, false
	}
	l, err := link.LoadPinnedLink(filepath.Join(sdir, linkPin), nil)
	if err != nil {
		return have, false
	}
	defer l.Close()
	info, err := l.Info()
	return have, err == nil && uint32(info.Program) == have.Prog && linkedTo(l, ifindex)
}

// StubCurrent reports whether the interface runs, as an earlier attach
// left it, what AttachStub would put there now (direct: the cube whose
// entry): that attach then writes the hop only, and what goes with the
// program (the far end's checksum setting) is in place already.
func (d *Datapath) StubCurrent(ifname string, ifindex int, hook Hook, dir Direction, direct *Program) bool {
	set, err := d.ifaceSet(hook, dir)
	if err != nil {
		return false
	}
	_, ok := d.runsRecorded(d.stubDir(ifname, hook, dir), ifindex, set, direct)
	return ok
}

// adoptStub takes over the link pinned in s's directory if it is on
// ifindex and runs what this attach would put there: then only the hop is
// written into the interface's slot. A direct entry so adopted becomes its
// cube's for the interfaces attached later. It reports false when the
// interface needs an attach.
func (d *Datapath) adoptStub(s *Stub, ifindex int, hop Hop, direct *Program) (bool, error) {
	r, ok := d.runsRecorded(s.dir, ifindex, s.set, direct)
	if !ok {
		return false, nil
	}
	if direct != nil {
		prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(r.Prog))
		if err != nil {
			return false, nil
		}
		s.set.adoptEntry(direct, prog)
	}
	s.slot = r.Slot
	if s.Hook == XDP {
		if err := d.attachCopier(s.dir, ifindex); err != nil {
			return false, fmt.Errorf("%s: %w", s.Ifname, err)
		}
	}
	if err := s.SetHop(hop); err != nil {
		return false, err
	}
	s.Adopted = true
	return true, nil
}

// PrepareStub puts on an interface no link is on yet, ahead of the change
// that peers it and outside the engine's lock, what that change will
// attach (direct: the cube whose direct entry), with an empty hop: until
// the change writes the hop its frames go on to the Linux stack, as they
// did. The change's AttachStub then finds it attached and writes the hop
// only (adoptStub), so the verifier runs and the waits for the kernel's RCU
// grace periods (the link, the copy machine, the far end's checksum
// setting) hold up no other change. A guess the change does not confirm
// costs what it would have: AttachStub replaces what does not fit.
func (d *Datapath) PrepareStub(ifname string, ifindex int, hook Hook, dir Direction, direct *Program) error {
	if hook == TC && d.classicTC {
		return nil // a classic filter is attached again anyway
	}
	if hook == XDP {
		if err := d.EnsureXDPIngress(ifindex); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(d.stubDir(ifname, hook, dir), linkPin)); err == nil {
		return nil
	}
	_, err := d.AttachStub(ifname, ifindex, hook, dir, Hop{}, direct)
	return err
}

// lockStubDir holds sdir's interface program for the caller until unlock.
func (d *Datapath) lockStubDir(sdir string) (unlock func()) {
	d.stubsMu.Lock()
	mu := d.stubDirs[sdir]
	if mu == nil {
		mu = &sync.Mutex{}
		d.stubDirs[sdir] = mu
	}
	d.stubsMu.Unlock()
	mu.Lock()
	return mu.Unlock
}
