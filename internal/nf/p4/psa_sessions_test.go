package p4

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/p4/tableruntime"
)

// psaReplCube runs internal/p4/testdata/psa_replicate.p4 (PSA), with its
// clone sessions and multicast groups as cube tables.
func psaReplCube(sessions []CloneSession, groups []McastGroup) *cube.Cube {
	ss, gs := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for i := range sessions {
		ss[cloneSessionsTable.Key(&sessions[i])] = nftest.Entry(sessions[i])
	}
	for i := range groups {
		gs[mcGroupsTable.Key(&groups[i])] = nftest.Entry(groups[i])
	}
	var ports []cube.Port
	for i := 0; i < 6; i++ {
		ports = append(ports, cube.Port{Name: fmt.Sprintf("p%d", i), Index: i})
	}
	return &cube.Cube{Name: "psa", Type: "p4", Hook: datapath.XDP,
		Config: inline(`{"program": "../../p4/testdata/psa_replicate.p4"}`),
		Ports:  ports,
		Tables: map[string]map[string]json.RawMessage{"clone_sessions": ss, "mcast_groups": gs}}
}

// A PSA program's clone sessions and multicast groups are the cube's
// clone_sessions and mcast_groups tables, as a v1model program's (the
// REST API, the CLI and P4Runtime's PRE entities write them): Sync writes
// them to the program's maps and removes them, and the program uses them.
func TestP4PSACubeReplicationTables(t *testing.T) {
	port := uint16(4)
	sess := []CloneSession{{Session: 10, Port: &port}}
	grp := []McastGroup{{Group: 5, Replicas: []tableruntime.Replica{{Port: 1, Rid: 7}, {Port: 2, Rid: 8}}}}
	r := nftest.New(t, Type, psaReplCube(sess, grp))
	prog, err := runtimeOf(r.Handle(), r.Model)
	if err != nil {
		t.Fatal(err)
	}
	ss, err1 := prog.CloneSessions()
	gs, err2 := prog.McastGroups()
	if err1 != nil || err2 != nil || len(ss) != 1 || ss[10].Port != 4 || len(gs) != 1 || len(gs[5]) != 2 || gs[5][1].Rid != 8 {
		t.Fatalf("maps: sessions %v groups %v (%v %v)", ss, gs, err1, err2)
	}
	frame := func(op byte) []byte {
		f := []byte{0, 0, 0, 0, 0, op, 0, 0, 0, 0, 0, 0, 0x88, 0xb5}
		return append(f, []byte{0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef}...)
	}
	// unicast: port 1, NORMAL_UNICAST (1) as egress saw it
	res := r.Run("p0", frame(1))
	if res.Verdict != datapath.XDPRedirect || res.Port != 1 || len(res.Data) < 30 || res.Data[24] != 1 || res.Data[25] != 1 {
		t.Fatalf("unicast: verdict %d port %d % x", res.Verdict, res.Port, res.Data)
	}
	// removed from the cube, removed from the maps
	if err := r.Update(psaReplCube(nil, nil)); err != nil {
		t.Fatal(err)
	}
	ss, _ = prog.CloneSessions()
	gs, _ = prog.McastGroups()
	if len(ss) != 0 || len(gs) != 0 {
		t.Fatalf("after removal: sessions %v groups %v", ss, gs)
	}
	// multicast to a group that no longer exists: no copy
	if res := r.Run("p0", frame(2)); res.Verdict == datapath.XDPRedirect {
		t.Fatalf("multicast to a removed group: verdict %d port %d", res.Verdict, res.Port)
	}
}
