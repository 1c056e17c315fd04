// Package nfrig loads one cube of an NF type into a private datapath and
// drives it with its own controller, without a daemon or an interface:
// the datapath tests (through internal/nftest) and the cost calibration
// (internal/estimate/calibrate) run NF programs on crafted frames with it.
// Every port looks peered with an interface (FakeIfindex).
package nfrig

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// Rig is one cube of an NF type loaded into a private datapath.
type Rig struct {
	DP    *datapath.Datapath
	Prog  *datapath.Program
	Model *cube.Cube
	Type  *cube.Type
	Ctl   cube.Controller
	// Injected and Transmitted record the slow path's packet output.
	Injected    []Frame
	Transmitted []Frame
	// Point and PointAddrs are what the handle's AttachPoint answers (a
	// transparent cube's attachment point and its addresses).
	Point      string
	PointAddrs []netip.Prefix
	// Log receives the controller's log lines (nil: dropped).
	Log func(format string, args ...any)
}

// Frame is a frame the controller sent through its handle.
type Frame struct {
	Port int
	Data []byte
}

// FakeIfindex is the interface index every port appears to be peered with.
const FakeIfindex = 1

// Slot is the cube's panel slot.
const Slot = 1

var seq atomic.Uint32

// Open loads model (a cube of typ) into a datapath of its own under
// /sys/fs/bpf and syncs its control plane. Close removes everything.
func Open(typ *cube.Type, model *cube.Cube) (*Rig, error) {
	if model.Type == "" {
		model.Type = typ.Name
	}
	if model.Hook == "" {
		model.Hook = typ.Hooks[0]
	}
	topo := cube.NewTopology()
	topo.Put(model)
	if err := topo.Validate(nil); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enft-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		return nil, err
	}
	r := &Rig{DP: dp, Model: model, Type: typ, Ctl: typ.New()}
	if err := r.load(); err != nil {
		dp.Destroy()
		return nil, err
	}
	return r, nil
}

func (r *Rig) load() error {
	obj, err := r.Type.ObjectOf(r.Model)
	if err != nil {
		return err
	}
	spec, err := r.Type.SpecOf(r.Model, obj)
	if err != nil {
		return err
	}
	if r.Prog, err = r.DP.LoadCube(r.Model.Name, r.Model.Hook, Slot, spec, nil); err != nil {
		return err
	}
	for _, p := range r.Model.Ports {
		if err := r.Prog.SetHop(uint32(p.Index), datapath.Hop{Kind: datapath.DstIface, Ifindex: FakeIfindex}); err != nil {
			return err
		}
	}
	if err := r.Ctl.Sync(r.Handle(), r.Model); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// Add loads another cube into the rig's datapath at slot (not Slot),
// synced by a controller of its own, its ports peered with FakeIfindex:
// chains of cubes for measurements (peer them with SetHop).
func (r *Rig) Add(typ *cube.Type, model *cube.Cube, slot uint32) (*datapath.Program, error) {
	if slot == Slot {
		return nil, fmt.Errorf("slot %d is the rig's own cube", slot)
	}
	if model.Type == "" {
		model.Type = typ.Name
	}
	if model.Hook == "" {
		model.Hook = typ.Hooks[0]
	}
	obj, err := typ.ObjectOf(model)
	if err != nil {
		return nil, err
	}
	spec, err := typ.SpecOf(model, obj)
	if err != nil {
		return nil, err
	}
	dc, err := r.DP.LoadCube(model.Name, model.Hook, slot, spec, nil)
	if err != nil {
		return nil, err
	}
	for _, p := range model.Ports {
		if err := dc.SetHop(uint32(p.Index), datapath.Hop{Kind: datapath.DstIface, Ifindex: FakeIfindex}); err != nil {
			return nil, err
		}
	}
	ctl := typ.New()
	if err := ctl.Sync(rigHandle{r, dc, ctl}, model); err != nil {
		return nil, fmt.Errorf("sync %s: %w", model.Name, err)
	}
	return dc, nil
}

// Close removes the datapath and everything in it.
func (r *Rig) Close() { r.DP.Destroy() }

// Update replaces the model (after validating it) and re-syncs.
func (r *Rig) Update(model *cube.Cube) error {
	topo := cube.NewTopology()
	topo.Put(model)
	if err := topo.Validate(nil); err != nil {
		return err
	}
	r.Model = model
	return r.Ctl.Sync(r.Handle(), model)
}

// Run feeds frame to the cube as received on the named port.
func (r *Rig) Run(inPort string, frame []byte) (datapath.RunResult, error) {
	p := r.Model.Port(inPort)
	if p == nil {
		return datapath.RunResult{}, fmt.Errorf("no port %q", inPort)
	}
	return r.DP.Run(r.Prog, uint32(p.Index), frame)
}

// RunTransparent feeds frame to a transparent cube as seen in direction dir,
// on a hop that ends at an interface.
func (r *Rig) RunTransparent(dir datapath.Direction, frame []byte) (datapath.RunResult, error) {
	hop, err := datapath.NewHop(datapath.DstIface, FakeIfindex, 0, 0, []datapath.Transparent{{Slot: Slot, Dir: dir}})
	if err != nil {
		return datapath.RunResult{}, err
	}
	if err := r.DP.SetMetadata(datapath.Metadata{Cube: datapath.MaxSlots, Hop: hop}); err != nil {
		return datapath.RunResult{}, err
	}
	out := make([]byte, len(frame)+512)
	ro := &ebpf.RunOptions{Data: frame, DataOut: out}
	v, err := r.Prog.EBPF().Run(ro)
	if err != nil {
		return datapath.RunResult{}, err
	}
	return datapath.RunResult{Verdict: v, Port: -1, Data: ro.DataOut}, nil
}

// Entry loads the program an interface peered with the named port runs
// (the cube's direct entry), unattached: it starts the hop into the cube
// as real traffic does, metadata included, so BPF_PROG_TEST_RUN can
// repeat it. The caller closes it.
func (r *Rig) Entry(inPort string) (*ebpf.Program, error) {
	p := r.Model.Port(inPort)
	if p == nil {
		return nil, fmt.Errorf("no port %q", inPort)
	}
	return r.DP.Entry(r.Model.Hook, datapath.Hop{Kind: datapath.DstCube, Slot: Slot, Port: uint32(p.Index)}, r.Prog)
}

// TransparentEntry is Entry for a transparent cube: the direct entry of a
// hop from an interface whose stack is the cube alone (direction dir), to
// an interface.
func (r *Rig) TransparentEntry(dir datapath.Direction) (*ebpf.Program, error) {
	hop, err := datapath.NewHop(datapath.DstIface, FakeIfindex, 0, 0, []datapath.Transparent{{Slot: Slot, Dir: dir}})
	if err != nil {
		return nil, err
	}
	return r.DP.Entry(r.Model.Hook, hop, r.Prog)
}

// Stats returns the cube's per-port counters.
func (r *Rig) Stats() ([]datapath.Stats, error) { return r.Prog.Stats() }

// Handle is the controller's view of the rig's own cube.
func (r *Rig) Handle() cube.Handle { return rigHandle{r, r.Prog, r.Ctl} }

type rigHandle struct {
	r   *Rig
	dc  *datapath.Program
	ctl cube.Controller
}

func (h rigHandle) Map(name string) (*ebpf.Map, error) { return h.dc.Map(name) }
func (h rigHandle) Inject(port int, frame []byte) error {
	h.r.Injected = append(h.r.Injected, Frame{port, append([]byte(nil), frame...)})
	return nil
}
func (h rigHandle) Transmit(port int, frame []byte) error {
	h.r.Transmitted = append(h.r.Transmitted, Frame{port, append([]byte(nil), frame...)})
	return nil
}
func (h rigHandle) PortIface(int) (*net.Interface, bool)  { return nil, false }
func (h rigHandle) PrepareRedirect(ifindex int) error     { return h.r.DP.EnsureRedirectTarget(ifindex) }
func (h rigHandle) AttachPoint() (string, []netip.Prefix) { return h.r.Point, h.r.PointAddrs }
func (h rigHandle) Controller() cube.Controller           { return h.ctl }
func (h rigHandle) Logf(format string, args ...any) {
	if h.r.Log != nil {
		h.r.Log(format, args...)
	}
}
