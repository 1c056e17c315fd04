package p4

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

func scanCube(sessions ...CloneSession) *cube.Cube {
	fwd := Entry{Table: "ScanIngress.ipv4_fwd", Match: map[string]string{"hdr.ipv4.dstAddr": "198.18.0.3"}, Action: "ScanIngress.forward", Params: map[string]string{"port": "3"}}
	rows := map[string]json.RawMessage{}
	for _, s := range sessions {
		s := s
		rows[cloneSessionsTable.Key(&s)] = nftest.Entry(s)
	}
	return &cube.Cube{Name: "ps", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../../examples/p4/portscan.p4"}`),
		Ports:  []cube.Port{{Name: "p1", Index: 1}, {Name: "p2", Index: 2}, {Name: "p3", Index: 3}, {Name: "p4", Index: 4}},
		Tables: map[string]map[string]json.RawMessage{"entries": {fwd.Key(): nftest.Entry(fwd)}, "clone_sessions": rows}}
}

// Sync writes the cube's clone sessions: the blocked source's probes leave
// by the session's port (the only copy, made in place).
func TestP4CubeCloneSessionMirrorsBlockedSource(t *testing.T) {
	port := uint16(4)
	r := nftest.New(t, Type, scanCube(CloneSession{Session: 100, Port: &port}))
	for p := uint16(1000); p < 1010; p++ {
		res := r.Run("p2", nftest.UDP4("198.18.0.1", "198.18.0.3", 5000, p, []byte("scan")))
		want := 3
		if p >= 1008 {
			want = 4 // blocked from the 8th consecutive port on, mirrored
		}
		if res.Verdict != datapath.XDPRedirect || res.Port != want {
			t.Fatalf("probe to %d: verdict %d port %d, want port %d", p, res.Verdict, res.Port, want)
		}
	}
	prog, err := runtimeOf(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := prog.CloneSessions()
	if err != nil || len(ss) != 1 || ss[100].Port != 4 {
		t.Fatalf("sessions in the map: %v %v", ss, err)
	}
	// a session removed from the cube is removed from the map by Sync
	if err := r.Update(scanCube()); err != nil {
		t.Fatal(err)
	}
	if ss, _ := prog.CloneSessions(); len(ss) != 0 {
		t.Fatalf("sessions after removal: %v", ss)
	}
	if res := r.Run("p2", nftest.UDP4("198.18.0.1", "198.18.0.3", 5000, 1011, []byte("scan"))); res.Verdict != datapath.XDPDrop {
		t.Fatalf("blocked source without a session: verdict %d", res.Verdict)
	}
}

func TestP4ReplicationConfigIsValidated(t *testing.T) {
	p4port := func(p uint16) *uint16 { return &p }
	cases := []struct {
		table string
		item  any
		want  string
	}{
		{"clone_sessions", CloneSession{Session: 0, Port: p4port(1)}, "0 means no clone"},
		{"clone_sessions", CloneSession{Session: 40000, Port: p4port(1)}, "ids are 1..32767"},
		{"clone_sessions", CloneSession{Session: 5}, "either a port or a mcast_group"},
		{"clone_sessions", CloneSession{Session: 5, Port: p4port(1), McastGroup: 3}, "either a port or a mcast_group"},
		{"clone_sessions", CloneSession{Session: 5, Port: p4port(99)}, "port 99"},
		{"mcast_groups", McastGroup{Group: 0}, "0 means no multicast"},
		{"mcast_groups", McastGroup{Group: 2, Replicas: []tableruntime.Replica{{Port: 1}, {Port: 1}}}, "listed twice"},
		{"mcast_groups", McastGroup{Group: 2, Replicas: make([]tableruntime.Replica, 33)}, "at most 32"},
	}
	for _, c := range cases {
		topo := cube.NewTopology()
		cb := scanCube()
		cb.Tables[c.table] = map[string]json.RawMessage{"k": nftest.Entry(c.item)}
		topo.Put(cb)
		if err := topo.Validate(nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.item, err, c.want)
		}
	}
	// a program without clone or multicast has neither
	topo := cube.NewTopology()
	cb := portfwdCube(t)
	cb.Tables["mcast_groups"] = map[string]json.RawMessage{"1": nftest.Entry(McastGroup{Group: 1})}
	topo.Put(cb)
	if err := topo.Validate(nil); err == nil || !strings.Contains(err.Error(), "uses neither clone nor multicast") {
		t.Fatalf("replication config on portfwd.p4: %v", err)
	}
}

// TestReplicationErrorFields: an invalid clone session or multicast group
// is reported against the field at fault.
func TestReplicationErrorFields(t *testing.T) {
	for _, c := range []struct {
		err     error
		idField string
		want    string
	}{
		{tableruntime.CheckCloneSession(0, tableruntime.CloneSession{}), "session", "session"},
		{tableruntime.CheckCloneSession(1, tableruntime.CloneSession{Port: 64}), "session", "port"},
		{tableruntime.CheckCloneSession(1, tableruntime.CloneSession{Port: 1, McastGroup: 1}), "session", "port"},
		{tableruntime.CheckCloneSession(1, tableruntime.CloneSession{Port: 1, Truncate: 2}), "session", "truncate"},
		{tableruntime.CheckMcastGroup(0, nil), "group", "group"},
		{tableruntime.CheckMcastGroup(1, []tableruntime.Replica{{Port: 509}}), "group", "replicas"},
		{tableruntime.CheckMcastGroup(1, []tableruntime.Replica{{Port: 2}, {Port: 2}}), "group", "replicas"},
	} {
		if got := replField(c.err, c.idField); got != c.want {
			t.Errorf("%v: field %q, want %q", c.err, got, c.want)
		}
	}
}
