package bpfmap

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/edgenf/edgenf/internal/testenv"
)

func newMap(t *testing.T, typ ebpf.MapType, n int) *ebpf.Map {
	t.Helper()
	testenv.NeedRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: uint32(n + 16)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestEachAndDelete: every entry is seen once across batches, an early
// stop stops, deleting skips keys already gone, for a hash (batches) and
// an LRU hash.
func TestEachAndDelete(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.LRUHash} {
		t.Run(typ.String(), func(t *testing.T) {
			const n = 10000 // more than two batches
			m := newMap(t, typ, n)
			for i := range uint32(n) {
				if err := m.Put(i, uint64(i)*3); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[uint32]bool{}
			if err := Each(m, func(k uint32, v uint64) bool {
				if v != uint64(k)*3 || seen[k] {
					t.Fatalf("entry %d = %d (seen before: %v)", k, v, seen[k])
				}
				seen[k] = true
				return true
			}); err != nil {
				t.Fatal(err)
			}
			// an LRU map may evict while it is filled: compare with what
			// the one-by-one walk finds
			var k uint32
			var v uint64
			want := 0
			for it := m.Iterate(); it.Next(&k, &v); {
				want++
			}
			if len(seen) != want || want < n*9/10 {
				t.Fatalf("saw %d entries, the map holds %d (of %d put)", len(seen), want, n)
			}
			calls := 0
			Each(m, func(uint32, uint64) bool { calls++; return calls < 3 })
			if calls != 3 {
				t.Fatalf("fn called %d times after asking to stop at 3", calls)
			}
			var odd []uint32
			for i := uint32(1); i < n; i += 2 {
				odd = append(odd, i)
			}
			if err := m.Delete(uint32(5)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) { // gone before the batch
				t.Fatal(err)
			}
			if err := Delete(m, odd); err != nil {
				t.Fatal(err)
			}
			left := 0
			Each(m, func(k uint32, _ uint64) bool {
				if k%2 == 1 {
					t.Fatalf("odd key %d survived", k)
				}
				left++
				return true
			})
			evens := 0
			for key := range seen {
				if key%2 == 0 {
					evens++
				}
			}
			if left != evens {
				t.Fatalf("%d entries left, want the %d even ones", left, evens)
			}
		})
	}
}

// TestEachWithoutBatch: an LPM trie has no batch lookup: Each walks it.
func TestEachWithoutBatch(t *testing.T) {
	testenv.NeedRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 16, Flags: 1 /* BPF_F_NO_PREALLOC */})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type key struct{ Plen, Addr uint32 }
	for i := range uint32(5) {
		if err := m.Put(key{32, i}, i); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := Each(m, func(k key, v uint32) bool { n++; return k.Addr == v }); err != nil || n != 5 {
		t.Fatalf("walked %d entries, err %v", n, err)
	}
	if err := Delete(m, []key{{32, 1}, {32, 9}, {32, 2}}); err != nil {
		t.Fatal(err)
	}
	n = 0
	Each(m, func(key, uint32) bool { n++; return true })
	if n != 3 {
		t.Fatalf("%d entries left, want 3", n)
	}
}
