package datapath

import "testing"

// What goes on an interface is the stub program alone, with the interface
// maps (every interface's hop and counters) and the shared maps it uses: not the injector or the copy
// machine of the same object (each verified per interface before), and
// not maps it does not use. Each caller gets its own copy.
func TestStubSpecIsTheStubAlone(t *testing.T) {
	for _, hook := range []Hook{XDP, TC} {
		spec, err := stubSpec(hook)
		if err != nil {
			t.Fatal(err)
		}
		if len(spec.Programs) != 1 || spec.Programs[stubProgram] == nil {
			t.Errorf("%s: programs %v, want %s alone", hook, keys(spec.Programs), stubProgram)
		}
		for _, m := range append([]string{mapPanel, mapScratch}, ifaceMapNames...) {
			if spec.Maps[m] == nil {
				t.Errorf("%s: map %s missing", hook, m)
			}
		}
		for _, m := range []string{mapPeers, mapPeerIDs, mapCopyRing} {
			if spec.Maps[m] != nil {
				t.Errorf("%s: map %s, which the stub does not use, kept", hook, m)
			}
		}
		delete(spec.Programs, stubProgram)
		again, err := stubSpec(hook)
		if err != nil {
			t.Fatal(err)
		}
		if again.Programs[stubProgram] == nil {
			t.Errorf("%s: a caller's change to its copy reached the next caller", hook)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The interface maps a cube object declares for its direct entry are the
// framework's (replaced at load): a tenant's kernel memory quota does not
// pay for them.
func TestInterfaceMapsAreNotTheCubes(t *testing.T) {
	spec, err := parseStubSpec(XDP)
	if err != nil {
		t.Fatal(err)
	}
	got := PreallocBytes(spec)
	for _, n := range ifaceMapNames {
		delete(spec.Maps, n)
	}
	if want := PreallocBytes(spec); got != want {
		t.Fatalf("%d bytes counted with the interface maps, %d without", got, want)
	}
}
