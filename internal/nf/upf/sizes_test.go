package upf

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/nftest"
)

// The maps follow max_sessions: each the per-session share of it, the
// counter array a row of rules per CPU, and the two load-time constants
// the fast path indexes with; the default is the object's own sizes.
func TestMapSizesFollowMaxSessions(t *testing.T) {
	obj, err := Type.Object(datapath.XDP)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sessions uint32
		cpus     int
	}{{1024, 2}, {model.DefaultMaxSessions, 4}, {model.MaxMaxSessions, 2}} {
		t.Run(fmt.Sprint(tc.sessions), func(t *testing.T) {
			spec, err := datapath.LoadSpec(obj)
			if err != nil {
				t.Fatal(err)
			}
			def := map[string]uint32{}
			for n, m := range spec.Maps {
				def[n] = m.MaxEntries
			}
			if err := sizeFor(spec, tc.sessions, tc.cpus); err != nil {
				t.Fatal(err)
			}
			s := tc.sessions
			want := map[string]uint32{"upf_rules": 2 * s, "upf_fars": 2 * s, "upf_qers": s, "upf_urrs": s, "upf_urr_rep": s,
				"upf_sdfs": s / 2, "upf_teid": 2 * s, "upf_ue4": 2 * s, "upf_ue6": 2 * s, "upf_teid_slots": s,
				"upf_ue_slots": s, "upf_ue_lists": s, mapRuleCount: uint32(tc.cpus) * 2 * s, "upf_neigh": maxNeigh}
			for n, w := range want {
				if got := spec.Maps[n].MaxEntries; got != w {
					t.Errorf("%s: %d entries, want %d", n, got, w)
				}
				if s == model.DefaultMaxSessions && n != mapRuleCount && def[n] != w {
					t.Errorf("%s: the default size %d is not the object's %d", n, w, def[n])
				}
			}
			for n, w := range map[string]uint32{constRuleRow: 2 * s, constSlotMask: s - 1} {
				var got uint32
				if err := spec.Variables[n].Get(&got); err != nil || got != w {
					t.Errorf("%s = %d (%v), want %d", n, got, err, w)
				}
			}
		})
	}
	spec, err := datapath.LoadSpec(obj)
	if err != nil {
		t.Fatal(err)
	}
	// a machine whose counter rows would not fit a 32-bit index
	if err := sizeFor(spec, model.MaxMaxSessions, 2048); err == nil || !strings.Contains(err.Error(), "2048 possible CPUs") {
		t.Fatalf("2048 CPUs × 2^21 rules: %v", err)
	}
}

// max_sessions: a power of two within bounds, the default when left out.
func TestMaxSessionsBounds(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want uint32
		err  string
	}{
		{``, model.DefaultMaxSessions, ""},
		{`,"max_sessions":1024`, 1024, ""},
		{`,"max_sessions":1048576`, 1 << 20, ""},
		{`,"max_sessions":512`, 0, "512: want a power of two from 1024 to 1048576"},
		{`,"max_sessions":3000`, 0, "3000: want a power of two"},
		{`,"max_sessions":2097152`, 0, "2097152: want a power of two"},
	} {
		c := &cube.Cube{Name: "u", Type: "upf", Config: json.RawMessage(`{"teid_range":"1-100"` + tc.set + `}`)}
		cfg, err := model.DecodeConfig(c)
		if tc.err != "" {
			if !errors.Is(err, cube.ErrUnprocessable) || !strings.Contains(err.Error(), "config.max_sessions") || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want 422 %q", tc.set, err, tc.err)
			}
			continue
		}
		if err != nil || cfg.MaxSessions != tc.want || cfg.TEIDSlots() != tc.want {
			t.Errorf("%s: %v, max_sessions %d", tc.set, err, cfg.MaxSessions)
		}
	}
}

// onLastCPU runs the test on the machine's last CPU: its row of counter
// blocks is the farthest from the first.
func onLastCPU(t *testing.T) {
	runtime.LockOSThread()
	var was, last unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	last.Set(runtime.NumCPU() - 1)
	if err := unix.SchedSetaffinity(0, &last); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.SchedSetaffinity(0, &was)
		runtime.UnlockOSThread()
	})
}

// A cube of 1,024 sessions: its maps are that small, a chosen TEID's slot
// and a packet's counter block are found with its sizes (a TEID whose
// offset is past 1,024 wraps to its slot; the last CPU's row starts at
// 2,048 blocks), a pool larger than its 1,024 UE slots indexes only those
// and leaves the rest of its addresses to the hash, a 1,025th session is
// refused, max_sessions cannot change under it, and a restart adopts it.
func TestSmallCubeHoldsItsSize(t *testing.T) {
	for _, hook := range hooks {
		t.Run(string(hook), func(t *testing.T) {
			onLastCPU(t)
			small := func(sessions ...*model.Session) *cube.Cube {
				c := testCube(hook, sessions...)
				c.Config = json.RawMessage(`{"max_sessions":1024,"ue_pools":[{"prefix":"198.19.0.0/16"}]}`)
				return c
			}
			cfg := &model.Config{MaxSessions: 1024}
			base, _ := cfg.ChosenTEIDs()
			chosen := base + 1024 + 7 // slot 7, second generation
			if sl, ok := cfg.TEIDSlot(chosen); !ok || sl != 7 {
				t.Fatalf("slot of %#x: %d", chosen, sl)
			}
			s := basicSession(1, chosen, "198.19.0.5", "", 0x9000)
			far := basicSession(2, 0x100, "198.19.8.1", "", 0x9001) // offset 2049: past the pool's slots
			r := newRigOf(t, small(s, far))

			for name, want := range map[string]uint32{"upf_rules": 2048, "upf_teid_slots": 1024, "upf_ue_slots": 1024, "upf_ue_lists": 1024,
				mapRuleCount: 2048 * countRows()} {
				m, err := r.Prog.Map(name)
				if err != nil || m.MaxEntries() != want {
					t.Fatalf("%s: %v entries (%v), want %d", name, m.MaxEntries(), err, want)
				}
			}
			if v := r.slotOf(7); v.TEID != teidKey(chosen) {
				t.Fatalf("slot 7 holds %#x", teidKey(v.TEID))
			}
			if p := r.uplink(chosen); p != 1 {
				t.Fatalf("chosen TEID in slot 7: port %d; %v", p, r.nonZero())
			}
			if got := r.where("198.19.0.5"); got != "slot" {
				t.Fatalf("UE in the pool's slots: in the %s, want the slot", got)
			}
			if got := r.where("198.19.8.1"); got != "hash" {
				t.Fatalf("UE past the pool's slots: in the %s", got)
			}
			for _, ue := range []string{"198.19.0.5", "198.19.8.1"} {
				if r.downlinkTEID(ue) == 0 {
					t.Fatalf("downlink to %s not forwarded: %v", ue, r.nonZero())
				}
			}
			dl := r.ctl.sessions[1].rules[ruleKey{PDR: 2}]
			if got, err := readCount(r.ctl.maps.ruleCount, dl.idx, dl.v.Flags); err != nil || got.Pkts[1] != 1 {
				t.Fatalf("the downlink rule counted %+v (%v) on the last CPU, want 1 packet", got, err)
			}

			full := small(s, far)
			for i := range uint64(1023) {
				x := basicSession(10+i, 0x1000+uint32(i), "", "", 0x9002)
				full.SetRow(TableSessions, x.Key(), nftest.Entry(x))
			}
			if err := r.Update(full); !errors.Is(err, cube.ErrInvalid) || !strings.Contains(err.Error(), "1025 entries, at most 1024") {
				t.Fatalf("a 1,025th session: %v", err)
			}

			grown := small(s, far)
			grown.Config = json.RawMessage(`{"max_sessions":2048,"ue_pools":[{"prefix":"198.19.0.0/16"}]}`)
			if err := r.Update(grown); !errors.Is(err, cube.ErrConflict) || !strings.Contains(err.Error(), "made for 1024 sessions") {
				t.Fatalf("max_sessions changed under the cube: %v", err)
			}
			if p := r.uplink(chosen); p != 1 {
				t.Fatalf("after the refused change: port %d", p)
			}

			r.Model = small(s, far)
			r.restart()
			if got := r.ctl.slotTEID[7]; got != chosen {
				t.Fatalf("restart: slot 7 owned by %#x", got)
			}
			if p := r.uplink(chosen); p != 1 || r.downlinkTEID("198.19.8.1") == 0 {
				t.Fatalf("after the restart: uplink port %d", p)
			}
		})
	}
}
