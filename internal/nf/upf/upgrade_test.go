package upf

import "testing"

// TestAdoptAfterAPartialReset: an upgrade that changed the layout of some
// of the upf's maps resets them (internal/engine/upgrade.go) and keeps the
// others. The restarted controller adopts what is left and writes the
// sessions again: the lists it kept lead to rules that are gone, and must
// not be deleted after the sessions' own lists were written under the same
// keys; both directions forward, and the URR kept its counts.
func TestAdoptAfterAPartialReset(t *testing.T) {
	r, _ := drainRig(t)
	wantUsed(t, r.used(1, 1), 2, 3)
	// the rules map was reset by the upgrade: empty, as the new map is
	var zero kRule
	for i := uint32(0); i < r.ctl.maps.rules.MaxEntries(); i++ {
		var v kRule
		if err := r.ctl.maps.rules.Lookup(i, &v); err != nil {
			t.Fatal(err)
		}
		if v != zero {
			if err := r.ctl.maps.rules.Put(i, &zero); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.restart()
	r.downlink(2)
	if res := r.Run("n3", gtp(false, 0x100, 9, udpPkt("198.19.0.5", "198.51.100.7", 4000, 53, make([]byte, 972)))); res.Port != 1 {
		t.Fatalf("uplink not forwarded after the partial reset: %v", r.nonZero())
	}
	wantUsed(t, r.used(1, 1), 3, 5)
}
