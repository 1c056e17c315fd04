package datapath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

// A hop from one cube into the next is a direct jump while the panel slot
// runs the program the hop was pointed at (direct.go), and follows the
// panel otherwise: after a hot swap, after an unload, and when the record of
// what the slot runs is stale.
func TestDirectHopsFollowThePanel(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, cubes, entry := directChain(t, hook)
			sent := map[datapath.Hook]uint32{datapath.XDP: datapath.XDPRedirect, datapath.TC: datapath.TCActRedirect}[hook]
			frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
			run := func(what string, want uint32, through uint64) {
				t.Helper()
				before := rx(t, cubes[1])
				v, _, err := entry.Benchmark(frame, 1, nil)
				if err != nil {
					t.Fatal(err)
				}
				if v != want || rx(t, cubes[1])-before != through {
					t.Fatalf("%s: verdict %d, %d frames into the second cube; want %d and %d", what, v, rx(t, cubes[1])-before, want, through)
				}
			}
			load := func(m string) *ebpf.Map {
				t.Helper()
				mp, err := ebpf.LoadPinnedMap(m, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mp.Close() })
				return mp
			}
			peerIDs := load(filepath.Join(root, "cubes", "c0", "enf_peer_ids"))
			owner := load(filepath.Join(root, string(hook)+"_owner"))
			panel := load(filepath.Join(root, string(hook)+"_panel"))
			idOf := func(c *datapath.Program) uint32 {
				info, err := c.EBPF().Info()
				if err != nil {
					t.Fatal(err)
				}
				id, _ := info.ID()
				return uint32(id)
			}
			peer := func() uint32 {
				var id uint32
				if err := peerIDs.Lookup(uint32(1), &id); err != nil {
					t.Fatal(err)
				}
				return id
			}
			if peer() != idOf(cubes[1]) {
				t.Fatalf("port 1's direct hop enters program %d, want the second cube's %d", peer(), idOf(cubes[1]))
			}
			run("direct", sent, 1)

			// The hop is a direct jump: with the slot emptied behind the
			// datapath's back (owner record left), it still arrives.
			var slot1 uint32
			if err := panel.Lookup(uint32(1), &slot1); err != nil {
				t.Fatal(err)
			}
			if err := panel.Delete(uint32(1)); err != nil {
				t.Fatal(err)
			}
			run("slot emptied behind the datapath's back", sent, 1)
			if err := panel.Put(uint32(1), cubes[1].EBPF()); err != nil {
				t.Fatal(err)
			}

			// A stale record of the slot's program: through the panel.
			if err := owner.Put(uint32(1), uint32(0x7fffffff)); err != nil {
				t.Fatal(err)
			}
			run("stale owner", sent, 1)
			if err := owner.Put(uint32(1), idOf(cubes[1])); err != nil {
				t.Fatal(err)
			}

			// Hot swap: the hop enters the new program.
			swapped, err := dp.LoadCube("c1", hook, 1, pfSpec(t, hook), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(swapped.Close)
			if peer() != idOf(swapped) || peer() == idOf(cubes[1]) {
				t.Fatalf("after the swap the direct hop enters program %d, want the new %d", peer(), idOf(swapped))
			}
			run("after the swap", sent, 1)

			// Unloaded: nothing is entered, directly or not.
			if err := swapped.Unload(); err != nil {
				t.Fatal(err)
			}
			if peer() != 0 {
				t.Fatalf("after the unload the direct hop still enters program %d", peer())
			}
			v, _, err := entry.Benchmark(frame, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v == sent {
				t.Fatalf("after the unload: verdict %d, the frame still went somewhere", v)
			}
		})
	}
}

// directChain is two portfwd cubes, c0:p1 peered with c1:p0, c1:p1 with an
// interface, and the entry of an interface peered with c0:p0.
func directChain(t *testing.T, hook datapath.Hook) (*datapath.Datapath, string, []*datapath.Program, *ebpf.Program) {
	testenv.NeedRoot(t)
	root := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfd-%d-%d", os.Getpid(), seq.Add(1)))
	dp, err := datapath.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dp.Destroy() })
	cubes := make([]*datapath.Program, 2)
	for i := range cubes {
		if cubes[i], err = dp.LoadCube(fmt.Sprintf("c%d", i), hook, uint32(i), pfSpec(t, hook), nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cubes[i].Close)
		m, _ := cubes[i].Map("pf_table")
		if err := m.Put(uint32(0), pfEntry{OutPort: 1, Flags: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cubes[0].SetHop(1, datapath.Hop{Kind: datapath.DstCube, Slot: 1, Port: 0}); err != nil {
		t.Fatal(err)
	}
	if err := cubes[1].SetHop(1, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}); err != nil {
		t.Fatal(err)
	}
	entry, err := dp.Entry(hook, datapath.Hop{Kind: datapath.DstCube, Slot: 0, Port: 0}, cubes[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { entry.Close() })
	return dp, root, cubes, entry
}

func rx(t *testing.T, c *datapath.Program) uint64 {
	t.Helper()
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st[0].RxPackets
}

func pfSpec(t testing.TB, hook datapath.Hook) *ebpf.CollectionSpec {
	obj, _ := portfwd.Type.Object(hook)
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// A direct hop that no longer enters a cube is overwritten, not deleted
// (vacant.go: a delete waits for an RCU grace period): the cube it entered
// is still released by the kernel once unloaded, and the port's direct hop
// takes a cube's program again when the slot is filled.
func TestDroppedDirectHopReleasesItsProgram(t *testing.T) {
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		t.Run(string(hook), func(t *testing.T) {
			dp, root, cubes, entry := directChain(t, hook)
			sent := map[datapath.Hook]uint32{datapath.XDP: datapath.XDPRedirect, datapath.TC: datapath.TCActRedirect}[hook]
			frame := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, make([]byte, 22))
			peers, err := ebpf.LoadPinnedMap(filepath.Join(root, "cubes", "c0", "enf_peers"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer peers.Close()
			held := func() uint32 {
				var id uint32
				if err := peers.Lookup(uint32(1), &id); err != nil {
					t.Fatal(err)
				}
				return id
			}
			info, err := cubes[1].EBPF().Info()
			if err != nil {
				t.Fatal(err)
			}
			old, _ := info.ID()
			if held() != uint32(old) {
				t.Fatalf("port 1's direct hop holds program %d, want the second cube's %d", held(), old)
			}
			if err := cubes[1].Unload(); err != nil {
				t.Fatal(err)
			}
			if held() == uint32(old) {
				t.Fatal("the unloaded cube's program is still held by the direct hop into its slot")
			}
			// Nothing else holds it: the kernel frees it (after its own
			// grace period, off the caller's path).
			deadline := time.Now().Add(10 * time.Second)
			for {
				p, err := ebpf.NewProgramFromID(old)
				if err != nil {
					break
				}
				p.Close()
				if time.Now().After(deadline) {
					t.Fatalf("program %d of the unloaded cube still exists 10 s later", old)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if v, _, err := entry.Benchmark(frame, 1, nil); err != nil || v == sent {
				t.Fatalf("with the second cube unloaded: verdict %d (%v), the frame still went somewhere", v, err)
			}

			// The slot filled again: the hop holding the vacant program
			// takes the new cube's, and the frame goes through it.
			again, err := dp.LoadCube("c1", hook, 1, pfSpec(t, hook), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(again.Close)
			m, _ := again.Map("pf_table")
			if err := m.Put(uint32(0), pfEntry{OutPort: 1, Flags: 1}); err != nil {
				t.Fatal(err)
			}
			if err := again.SetHop(1, datapath.Hop{Kind: datapath.DstIface, Ifindex: 1}); err != nil {
				t.Fatal(err)
			}
			info, err = again.EBPF().Info()
			if err != nil {
				t.Fatal(err)
			}
			if id, _ := info.ID(); held() != uint32(id) {
				t.Fatalf("after the reload port 1's direct hop holds program %d, want the new cube's %d", held(), id)
			}
			before := rx(t, again)
			if v, _, err := entry.Benchmark(frame, 1, nil); err != nil || v != sent || rx(t, again)-before != 1 {
				t.Fatalf("after the reload: verdict %d (%v), %d frames into the new cube; want %d and 1", v, err, rx(t, again)-before, sent)
			}
		})
	}
}
