package conntrack

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/edgenf/edgenf/internal/ktime"
	"github.com/edgenf/edgenf/internal/testenv"
)

// entry is a connection table's value as the NAT keeps it: the connection,
// whether this is the original direction's entry, and the other tuple.
type entry struct {
	C     Conn
	Orig  uint8
	_     [7]uint8
	Other Tuple
}

func tuple(b byte) Tuple {
	return Tuple{Saddr: [4]byte{198, 18, 0, b}, Daddr: [4]byte{198, 19, 0, 1}, Proto: 17}
}

// TestSweep: idle connections go, with their reply entries; fresh ones
// stay; all takes everything, orphaned reply entries too; connections are
// counted once.
func TestSweep(t *testing.T) {
	testenv.NeedRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 16, ValueSize: 40, MaxEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	now := ktime.Now()
	idle := Conn{LastSeen: now - 60e9, State: UDPUnreplied} // 30 s timeout
	fresh := Conn{LastSeen: now, State: UDPUnreplied}
	put := func(k Tuple, v entry) {
		if err := m.Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	put(tuple(1), entry{C: idle, Orig: 1, Other: tuple(101)}) // idle pair
	put(tuple(101), entry{C: fresh})                          // (the reply's own stamp does not count)
	put(tuple(2), entry{C: fresh, Orig: 1, Other: tuple(102)})
	put(tuple(102), entry{C: idle})
	put(tuple(3), entry{C: idle, Orig: 1}) // a single entry
	put(tuple(103), entry{C: idle})        // an orphaned reply
	conn := func(v entry) (Conn, bool, Tuple) { return v.C, v.Orig == 0, v.Other }
	var to KTimeouts

	n, err := Sweep(m, to, false, conn)
	if err != nil || n != 2 {
		t.Fatalf("swept %d connections (%v), want 2", n, err)
	}
	for b, want := range map[byte]bool{1: false, 101: false, 2: true, 102: true, 3: false, 103: true} {
		var v entry
		err := m.Lookup(tuple(b), &v)
		if got := err == nil; got != want {
			t.Errorf("entry %d present %v, want %v (%v)", b, got, want, err)
		} else if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			t.Error(err)
		}
	}
	if n, err = Sweep(m, to, true, conn); err != nil || n != 1 {
		t.Fatalf("flushed %d connections (%v), want 1", n, err)
	}
	var k Tuple
	var v entry
	if it := m.Iterate(); it.Next(&k, &v) {
		t.Fatalf("entry %+v left after flushing everything", k)
	}
}
