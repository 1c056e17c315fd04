package tableruntime

import (
	"strings"
	"testing"
)

func TestCheckReplication(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{CheckCloneSession(0, CloneSession{}), "0 means no clone"},
		{CheckCloneSession(MaxSessionID+1, CloneSession{}), "ids are 1..32767"},
		{CheckCloneSession(1, CloneSession{Port: 64}), "port 64"},
		{CheckCloneSession(1, CloneSession{Port: 1, McastGroup: 1}), "not both"},
		{CheckCloneSession(1, CloneSession{Port: 1, Truncate: 2}), "Ethernet header"},
		{CheckCloneSession(1, CloneSession{Port: CPUPort}), ""},
		{CheckCloneSession(1, CloneSession{McastGroup: 9, Truncate: 64}), ""},
		{CheckMcastGroup(0, nil), "0 means no multicast"},
		{CheckMcastGroup(1<<16, nil), "1..65535"},
		{CheckMcastGroup(1, make([]Replica, MaxReplicas+1)), "at most 32"},
		{CheckMcastGroup(1, []Replica{{Port: 2, Rid: 1}, {Port: 2, Rid: 1}}), "listed twice"},
		{CheckMcastGroup(1, []Replica{{Port: 2, Rid: 1}, {Port: 2, Rid: 2}, {Port: CPUPort}}), ""},
		{CheckMcastGroup(1, []Replica{{Port: 509}}), "port 509"},
	} {
		switch {
		case c.want == "" && c.err != nil:
			t.Errorf("unexpected error %v", c.err)
		case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
			t.Errorf("got %v, want %q", c.err, c.want)
		}
	}
	g := []Replica{{Port: 1, Rid: 7}, {Port: 63, Rid: 65535}}
	if back := decodeGroup(encodeGroup(g)); len(back) != 2 || back[1] != g[1] {
		t.Fatalf("group round trip: %v", back)
	}
}
