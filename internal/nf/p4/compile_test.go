package p4

import (
	"fmt"
	"testing"

	p4c "github.com/edgenf/edgenf/internal/p4"
)

// TestCompileCacheIsBounded: compiled programs nobody runs are evicted
// least recently used first, beyond cacheMaxPrograms or cacheMaxBytes; a
// program a cube runs (pinned) is kept whatever the bounds, and counts
// again once unpinned.
func TestCompileCacheIsBounded(t *testing.T) {
	key := func(i int) [32]byte {
		s := &Settings{Program: fmt.Sprintf("cache-test-%d.p4", i), Source: "x"}
		return keyOf(s)
	}
	small := func() *p4c.Result { return &p4c.Result{Object: make([]byte, 1024)} }
	var keys [][32]byte
	t.Cleanup(func() {
		programs.Lock()
		defer programs.Unlock()
		for _, k := range keys {
			if e, ok := programs.m[k]; ok {
				if e.elem != nil {
					programs.lru.Remove(e.elem)
					programs.bytes -= e.size
				}
				delete(programs.m, k)
			}
		}
	})
	cached := func(k [32]byte) bool {
		programs.Lock()
		defer programs.Unlock()
		_, ok := programs.m[k]
		return ok
	}
	pinned := key(-1)
	keys = append(keys, pinned)
	store(pinned, small(), 1)
	for i := range 2 * cacheMaxPrograms {
		keys = append(keys, key(i))
		store(key(i), small(), 0)
		if i == cacheMaxPrograms {
			lookup(key(1)) // used: now more recent than key(2)..
		}
	}
	programs.Lock()
	n := programs.lru.Len()
	programs.Unlock()
	if n > cacheMaxPrograms {
		t.Fatalf("%d unpinned programs cached, at most %d", n, cacheMaxPrograms)
	}
	if !cached(pinned) {
		t.Fatal("the pinned program was evicted")
	}
	if cached(key(2)) || !cached(key(1)) || !cached(key(2*cacheMaxPrograms-1)) {
		t.Fatal("not the least recently used evicted first")
	}
	// bytes: one program larger than the bound evicts every unpinned one
	// (itself included) once it is unpinned
	big := key(1000)
	keys = append(keys, big)
	store(big, &p4c.Result{Object: make([]byte, cacheMaxBytes+1)}, 1)
	if !cached(big) {
		t.Fatal("a pinned program over the byte bound was not kept")
	}
	unpin(big)
	programs.Lock()
	n, bytes := programs.lru.Len(), programs.bytes
	programs.Unlock()
	if cached(big) || bytes > cacheMaxBytes {
		t.Fatalf("after unpinning a program over the byte bound: %d programs, %d bytes cached", n, bytes)
	}
	unpin(pinned)
	if !cached(pinned) {
		t.Fatal("an unpinned program was dropped although the cache had room")
	}
}
