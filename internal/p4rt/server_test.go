package p4rt

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/p4"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/tenant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const dev = 1

// rig is a server on 127.0.0.1 over a real engine, device 1 = cube "sw",
// and a client made of this package's messages.
type rig struct {
	t    testing.TB
	eng  *engine.Engine
	conn *grpc.ClientConn
}

func newRig(t testing.TB) *rig {
	eng := nftest.Engine(t)
	srv := New(Config{Engine: eng, Devices: map[uint64]string{dev: "sw"}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(Codec)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rig{t: t, eng: eng, conn: conn}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func (r *rig) call(method string, in, out any) error {
	return r.conn.Invoke(ctx(r.t), "/p4.v1.P4Runtime/"+method, in, out)
}

func (r *rig) write(election uint64, updates ...*Update) error {
	return r.call("Write", &WriteRequest{DeviceID: dev, ElectionID: &Uint128{Low: election}, Updates: updates}, &WriteResponse{})
}

func (r *rig) mustWrite(election uint64, updates ...*Update) {
	r.t.Helper()
	if err := r.write(election, updates...); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) read(entities ...*Entity) ([]*Entity, error) {
	st, err := r.conn.NewStream(ctx(r.t), &grpc.StreamDesc{ServerStreams: true}, "/p4.v1.P4Runtime/Read")
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(&ReadRequest{DeviceID: dev, Entities: entities}); err != nil {
		return nil, err
	}
	st.CloseSend()
	var out []*Entity
	for {
		var resp ReadResponse
		if err := st.RecvMsg(&resp); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, resp.Entities...)
	}
}

func (r *rig) mustRead(entities ...*Entity) []*Entity {
	r.t.Helper()
	out, err := r.read(entities...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *rig) setPipeline(election uint64, action int32, src []byte, info []byte, cookie uint64) error {
	cfg := &PipelineConfig{DeviceConfig: src, Cookie: &Cookie{Cookie: cookie}}
	if info != nil {
		cfg.P4Info, cfg.HasP4Info = info, true
	}
	return r.call("SetForwardingPipelineConfig", &SetPipelineRequest{DeviceID: dev, ElectionID: &Uint128{Low: election}, Action: action, Config: cfg}, &SetPipelineResponse{})
}

// client is one StreamChannel.
type client struct {
	t  testing.TB
	st grpc.ClientStream
	in chan *StreamResponse
}

func (r *rig) stream(election uint64) *client {
	c, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	st, err := r.conn.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
	if err != nil {
		r.t.Fatal(err)
	}
	cl := &client{t: r.t, st: st, in: make(chan *StreamResponse, 64)}
	go func() {
		defer close(cl.in)
		for {
			m := &StreamResponse{}
			if err := st.RecvMsg(m); err != nil {
				cl.in <- &StreamResponse{Error: &StreamError{CanonicalCode: int32(status.Code(err)), Message: err.Error()}}
				return
			}
			cl.in <- m
		}
	}()
	cl.send(&StreamRequest{Arbitration: &Arbitration{DeviceID: dev, ElectionID: &Uint128{Low: election}}})
	return cl
}

func (c *client) send(m *StreamRequest) {
	c.t.Helper()
	if err := c.st.SendMsg(m); err != nil {
		c.t.Fatal(err)
	}
}

// next waits for a message the filter accepts (nil: any).
func (c *client) next(what string, keep func(*StreamResponse) bool) *StreamResponse {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("%s: stream closed", what)
			}
			if keep == nil || keep(m) {
				return m
			}
		case <-deadline:
			c.t.Fatalf("%s: nothing within 10s", what)
		}
	}
}

func isArb(m *StreamResponse) bool { return m.Arbitration != nil }

func wantCode(t *testing.T, what string, err error, c codes.Code) {
	t.Helper()
	if status.Code(err) != c {
		t.Fatalf("%s: %v, want %s", what, err, c)
	}
	t.Logf("%s: %v", what, err)
}

func program(t testing.TB, name string) []byte {
	b, err := os.ReadFile("../../examples/p4/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *rig) info() *p4info.P4Info {
	v, err := r.eng.View(tenant.Admin, "sw", "p4info")
	if err != nil {
		r.t.Fatal(err)
	}
	return v.(*p4info.P4Info)
}

func tableID(t testing.TB, info *p4info.P4Info, name string) *p4info.TableLayout {
	tl := info.Edgenf.Table(name)
	if tl == nil {
		t.Fatalf("no table %s", name)
	}
	return tl
}

func actionID(t testing.TB, tl *p4info.TableLayout, name string) *p4info.ActionLayout {
	a := tl.Action(name)
	if a == nil {
		t.Fatalf("table %s has no action %s", tl.Name, name)
	}
	return a
}

func mac(s string) []byte {
	b, _ := net.ParseMAC(s)
	return b
}

func insert(e *Entity) *Update { return &Update{Type: UpdateInsert, Entity: e} }
func modify(e *Entity) *Update { return &Update{Type: UpdateModify, Entity: e} }
func del(e *Entity) *Update    { return &Update{Type: UpdateDelete, Entity: e} }

// dmacEntry is l2learn's dmac: dstAddr → forward(port).
func dmacEntry(t testing.TB, info *p4info.P4Info, dst string, port byte) *Entity {
	tl := tableID(t, info, "dmac")
	a := actionID(t, tl, "forward")
	return &Entity{TableEntry: &TableEntry{TableID: tl.ID,
		Match:  []*FieldMatch{{FieldID: tl.Keys[0].ID, Kind: "exact", Value: mac(dst)}},
		Action: &TableAction{Action: &Action{ActionID: a.ID, Params: []*Param{{ParamID: a.Params[0].ID, Value: []byte{port}}}}}}}
}

// addPorts gives the switch ports 1 and 2; port 2 leads to another cube,
// so that what the switch sends out of it is counted.
func (r *rig) addPorts() {
	r.t.Helper()
	nftest.MustUpdate(r.t, r.eng, func(top *cube.Topology) error {
		if err := top.AddCube(&cube.Cube{Name: "sink", Type: "portfwd", Hook: datapath.XDP, Ports: []cube.Port{{Name: "p0", Index: 0}}}); err != nil {
			return err
		}
		if err := top.AddPort("sw", cube.Port{Name: "p1", Index: 1}); err != nil {
			return err
		}
		return top.AddPort("sw", cube.Port{Name: "p2", Index: 2, Peer: "sink:p0"})
	})
}

func (r *rig) txPackets(port int) uint64 {
	st, err := r.eng.Stats(tenant.Admin, "sw")
	if err != nil {
		r.t.Fatal(err)
	}
	for _, p := range st.Ports {
		if p.Index == port {
			return p.TxPackets
		}
	}
	return 0
}

// waitTx waits for the cube to have sent n packets out of a port.
func (r *rig) waitTx(port int, n uint64) bool {
	for range 100 {
		if r.txPackets(port) >= n {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func frame(dst, src string) []byte {
	f := nftest.UDP4("198.18.0.1", "198.18.0.2", 1, 2, []byte("p4rt"))
	copy(f[0:6], mac(dst))
	copy(f[6:12], mac(src))
	return f
}

func TestP4RuntimeL2Switch(t *testing.T) {
	r := newRig(t)
	var caps CapabilitiesResponse
	if err := r.call("Capabilities", &CapabilitiesRequest{}, &caps); err != nil || caps.Version != "1.4.0" {
		t.Fatalf("capabilities %q %v", caps.Version, err)
	}
	wantCode(t, "get before a pipeline", r.call("GetForwardingPipelineConfig", &GetPipelineRequest{DeviceID: dev}, &GetPipelineResponse{}), codes.FailedPrecondition)
	wantCode(t, "unknown device", r.call("GetForwardingPipelineConfig", &GetPipelineRequest{DeviceID: 7}, &GetPipelineResponse{}), codes.NotFound)

	// arbitration: 10 is the primary, 5 a backup, a second 10 refused
	primary := r.stream(10)
	if m := primary.next("primary arbitration", isArb); m.Arbitration.Status.Code != int32(codes.OK) || m.Arbitration.ElectionID.Low != 10 {
		t.Fatalf("primary got %+v", m.Arbitration)
	}
	backup := r.stream(5)
	if m := backup.next("backup arbitration", isArb); m.Arbitration.Status.Code != int32(codes.AlreadyExists) || m.Arbitration.ElectionID.Low != 10 {
		t.Fatalf("backup got %+v", m.Arbitration)
	}
	dupe := r.stream(10)
	if m := dupe.next("duplicate election id", nil); m.Error == nil || m.Error.CanonicalCode != int32(codes.InvalidArgument) {
		t.Fatalf("duplicate election id: %+v", m)
	}

	src := program(t, "l2learn.p4")
	wantCode(t, "pipeline from a backup", r.setPipeline(5, ActionVerifyAndCommit, src, nil, 1), codes.PermissionDenied)
	wantCode(t, "program that does not compile", r.setPipeline(10, ActionVerify, []byte("control x {"), nil, 1), codes.InvalidArgument)
	if err := r.setPipeline(10, ActionVerifyAndCommit, src, nil, 0xc00c1e); err != nil {
		t.Fatal(err)
	}
	r.addPorts()

	// Get: our P4Info, with the compiled program's ids, and the cookie
	var got GetPipelineResponse
	if err := r.call("GetForwardingPipelineConfig", &GetPipelineRequest{DeviceID: dev}, &got); err != nil {
		t.Fatal(err)
	}
	info := r.info()
	if got.Config.Cookie == nil || got.Config.Cookie.Cookie != 0xc00c1e || !bytes.Equal(got.Config.DeviceConfig, src) {
		t.Fatalf("cookie %+v, device config %d bytes", got.Config.Cookie, len(got.Config.DeviceConfig))
	}
	objs, err := objectsOf(got.Config.P4Info)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{}
	for _, o := range objs {
		ids[o.kind+" "+o.name] = o.id
	}
	for _, tb := range info.Tables {
		if ids["table "+tb.Preamble.Name] != tb.Preamble.ID {
			t.Errorf("table %s: id 0x%08x in P4Info, compiled 0x%08x", tb.Preamble.Name, ids["table "+tb.Preamble.Name], tb.Preamble.ID)
		}
	}
	for _, a := range info.Actions {
		if ids["action "+a.Preamble.Name] != a.Preamble.ID {
			t.Errorf("action %s: id 0x%08x in P4Info", a.Preamble.Name, ids["action "+a.Preamble.Name])
		}
	}
	if ids["digest learn_t"] == 0 || ids["controller packet metadata packet_in"] == 0 {
		t.Fatalf("P4Info objects %v", ids)
	}
	// the P4Info we serve is accepted back; one with a wrong id is not
	if err := r.setPipeline(10, ActionVerify, src, got.Config.P4Info, 0); err != nil {
		t.Fatal(err)
	}
	bad := *info
	bad.Tables = []*p4info.Table{{Preamble: p4info.Preamble{ID: 0x02000bad, Name: info.Tables[0].Preamble.Name}, Size: "16"}}
	wantCode(t, "p4info with a wrong table id", r.setPipeline(10, ActionVerify, src, mustProto(t, &bad), 0), codes.InvalidArgument)

	// table entries: written, then read back in P4Runtime form
	const a, b = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
	if !r.waitTx(2, 0) {
		t.Fatal("stats")
	}
	before := r.txPackets(2)
	r.mustWrite(10, insert(dmacEntry(t, info, b, 2)))
	dmac := tableID(t, info, "dmac")
	ents := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID}})
	if len(ents) != 1 || !bytes.Equal(ents[0].TableEntry.Match[0].Value, mac(b)) ||
		ents[0].TableEntry.Action.Action.ActionID != actionID(t, dmac, "forward").ID || ents[0].TableEntry.Action.Action.Params[0].Value[0] != 2 {
		t.Fatalf("read back %+v", ents)
	}
	// all tables (table_id 0)
	if all := r.mustRead(&Entity{TableEntry: &TableEntry{}}); len(all) != 1 {
		t.Fatalf("all tables: %d entries", len(all))
	}
	// the entry forwards: A -> B in on port 1 leaves by port 2
	if err := r.eng.Inject(tenant.Admin, "sw", "p1", frame(b, a), false); err != nil {
		t.Fatal(err)
	}
	if !r.waitTx(2, before+1) {
		t.Fatalf("port 2 sent %d packets, want %d", r.txPackets(2), before+1)
	}
	// and it is in the cube's state (persisted), under its canonical key
	if raw := r.eng.Entries(tenant.Admin, "sw", "entries"); len(raw) != 1 || !bytes.Contains(raw[0], []byte(b)) {
		t.Fatalf("state %s", raw)
	}

	// bad input: exact codes, and nothing changes
	wantCode(t, "insert again", r.write(10, insert(dmacEntry(t, info, b, 2))), codes.AlreadyExists)
	badTable := dmacEntry(t, info, a, 2)
	badTable.TableEntry.TableID = 0x02abcdef
	wantCode(t, "unknown table id", r.write(10, insert(badTable)), codes.InvalidArgument)
	wide := dmacEntry(t, info, a, 2)
	wide.TableEntry.Match[0].Value = []byte{1, 2, 3, 4, 5, 6, 7}
	wantCode(t, "48-bit field given 7 bytes", r.write(10, insert(wide)), codes.InvalidArgument)
	widePort := dmacEntry(t, info, a, 2)
	widePort.TableEntry.Action.Action.Params[0].Value = []byte{0x02, 0x00} // 512 in 9 bits
	wantCode(t, "9-bit parameter given 512", r.write(10, insert(widePort)), codes.InvalidArgument)
	wantCode(t, "write from a backup", r.write(5, insert(dmacEntry(t, info, a, 1))), codes.PermissionDenied)
	wantCode(t, "modify a missing entry", r.write(10, modify(dmacEntry(t, info, a, 1))), codes.NotFound)
	wantCode(t, "extern entries", r.write(10, insert(&Entity{Other: fEntityExtern})), codes.Unimplemented)
	// a batch: one good, one bad: UNKNOWN with a p4.v1.Error per update
	err = r.write(10, insert(dmacEntry(t, info, a, 1)), insert(badTable))
	wantCode(t, "batch", err, codes.Unknown)
	details := status.Convert(err).Proto().GetDetails()
	if len(details) != 2 || details[0].TypeUrl != errorTypeURL {
		t.Fatalf("details %v", details)
	}
	var e0, e1 P4Error
	e0.unmarshal(details[0].Value)
	e1.unmarshal(details[1].Value)
	if e0.CanonicalCode != 0 || e1.CanonicalCode != int32(codes.InvalidArgument) {
		t.Fatalf("per-update errors %+v %+v", e0, e1)
	}
	if n := len(r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID}})); n != 2 {
		t.Fatalf("%d entries after the batch, want 2", n)
	}
	// an entry written through the REST API in another notation is the
	// same P4Runtime entry
	rest := []byte(`{"table": "dmac", "match": {"hdr.ethernet.dstAddr": "0x02000000000d"}, "action": "forward", "params": {"port": "1"}}`)
	if err := r.eng.ChangeEntries(tenant.Admin, "sw", "entries", func(tx *engine.EntryTx) error { _, err := tx.Put(rest); return err }); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "insert over a REST entry", r.write(10, insert(dmacEntry(t, info, "02:00:00:00:00:0d", 2))), codes.AlreadyExists)
	r.mustWrite(10, del(dmacEntry(t, info, "02:00:00:00:00:0d", 0)))
	if n := len(r.eng.Entries(tenant.Admin, "sw", "entries")); n != 2 {
		t.Fatalf("%d entries in the state after deleting the REST entry, want 2", n)
	}

	// modify, read one entry by its match, delete
	r.mustWrite(10, modify(dmacEntry(t, info, a, 2)))
	one := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID, Match: dmacEntry(t, info, a, 0).TableEntry.Match}})
	if len(one) != 1 || one[0].TableEntry.Action.Action.Params[0].Value[0] != 2 {
		t.Fatalf("modified entry %+v", one)
	}
	r.mustWrite(10, del(dmacEntry(t, info, a, 0)))
	if n := len(r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID}})); n != 1 {
		t.Fatalf("%d entries after delete", n)
	}

	// default action: the program's, then set, then back
	flood := actionID(t, dmac, "flood")
	def := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID, IsDefaultAction: true}})
	if len(def) != 1 || def[0].TableEntry.Action.Action.ActionID != flood.ID {
		t.Fatalf("default %+v", def)
	}
	fwd := actionID(t, dmac, "forward")
	r.mustWrite(10, modify(&Entity{TableEntry: &TableEntry{TableID: dmac.ID, IsDefaultAction: true,
		Action: &TableAction{Action: &Action{ActionID: fwd.ID, Params: []*Param{{ParamID: fwd.Params[0].ID, Value: []byte{1}}}}}}}))
	def = r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID, IsDefaultAction: true}})
	if def[0].TableEntry.Action.Action.ActionID != fwd.ID {
		t.Fatalf("default after modify %+v", def[0].TableEntry.Action.Action)
	}
	r.mustWrite(10, modify(&Entity{TableEntry: &TableEntry{TableID: dmac.ID, IsDefaultAction: true}}))
	if def = r.mustRead(&Entity{TableEntry: &TableEntry{TableID: dmac.ID, IsDefaultAction: true}}); def[0].TableEntry.Action.Action.ActionID != flood.ID {
		t.Fatalf("default after reset %+v", def[0].TableEntry.Action.Action)
	}

	// multicast group
	group := &Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{GroupID: 1, Replicas: []*Replica{{Port: []byte{1}}, {Port: []byte{2}, Instance: 3}}}}}
	r.mustWrite(10, insert(group))
	wantCode(t, "group again", r.write(10, insert(group)), codes.AlreadyExists)
	groups := r.mustRead(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{}}})
	if len(groups) != 1 || len(groups[0].PREEntry.MulticastGroup.Replicas) != 2 || groups[0].PREEntry.MulticastGroup.Replicas[1].Instance != 3 {
		t.Fatalf("groups %+v", groups)
	}
	wantCode(t, "delete a missing group", r.write(10, del(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{GroupID: 9}}})), codes.NotFound)

	// packet-in: a link-local frame goes to the CPU port with its
	// packet_in header (ingress_port) as metadata
	ll := frame("01:80:c2:00:00:0e", a)
	if err := r.eng.Inject(tenant.Admin, "sw", "p1", ll, false); err != nil {
		t.Fatal(err)
	}
	m := primary.next("packet-in", func(m *StreamResponse) bool { return m.Packet != nil })
	pin := info.Edgenf.SlowPath.PacketIn
	if !bytes.Equal(m.Packet.Payload, ll) || len(m.Packet.Metadata) != len(pin.Fields) ||
		m.Packet.Metadata[0].MetadataID != pin.Fields[0].ID || !bytes.Equal(m.Packet.Metadata[0].Value, []byte{1}) {
		t.Fatalf("packet-in %x %+v", m.Packet.Payload, m.Packet.Metadata)
	}

	// packet-out: with egress_port = 2 the program sends it out of port 2
	pout := info.Edgenf.SlowPath.PacketOut
	before = r.txPackets(2)
	primary.send(&StreamRequest{Packet: &Packet{Payload: frame(b, a), Metadata: []*PacketMetadata{{MetadataID: pout.Fields[0].ID, Value: []byte{2}}}}})
	if !r.waitTx(2, before+1) {
		t.Fatalf("packet-out: port 2 sent %d packets, want %d", r.txPackets(2), before+1)
	}
	// a backup's packet-out and a bad metadata id are refused on the stream
	backup.send(&StreamRequest{Packet: &Packet{Payload: frame(b, a)}})
	if m := backup.next("backup packet-out", func(m *StreamResponse) bool { return m.Error != nil }); m.Error.CanonicalCode != int32(codes.PermissionDenied) || m.Error.PacketOut == nil {
		t.Fatalf("backup packet-out: %+v", m.Error)
	}
	primary.send(&StreamRequest{Packet: &Packet{Payload: frame(b, a), Metadata: []*PacketMetadata{{MetadataID: 99, Value: []byte{2}}}}})
	if m := primary.next("bad metadata", func(m *StreamResponse) bool { return m.Error != nil }); m.Error.CanonicalCode != int32(codes.InvalidArgument) {
		t.Fatalf("bad metadata: %+v", m.Error)
	}

	// digests: once configured, an unknown source MAC is streamed
	learn := info.Edgenf.SlowPath.Digest("learn_t")
	r.mustWrite(10, insert(&Entity{DigestEntry: &DigestEntry{DigestID: learn.ID, Config: &DigestConfig{MaxListSize: 1}}}))
	if d := r.mustRead(&Entity{DigestEntry: &DigestEntry{}}); len(d) != 1 || d[0].DigestEntry.DigestID != learn.ID {
		t.Fatalf("digest entries %+v", d)
	}
	const c = "02:00:00:00:00:0c"
	if err := r.eng.Inject(tenant.Admin, "sw", "p1", frame(b, c), false); err != nil {
		t.Fatal(err)
	}
	dm := primary.next("digest", func(m *StreamResponse) bool { return m.Digest != nil })
	if dm.Digest.DigestID != learn.ID || len(dm.Digest.Data) != 1 || len(dm.Digest.Data[0].Members) != 2 ||
		!bytes.Equal(dm.Digest.Data[0].Members[0].Bitstring, mac(c)) || !bytes.Equal(dm.Digest.Data[0].Members[1].Bitstring, []byte{1}) {
		t.Fatalf("digest %+v", dm.Digest)
	}
	primary.send(&StreamRequest{DigestAck: &DigestListAck{DigestID: learn.ID, ListID: dm.Digest.ListID}})

	// the primary leaves: the backup becomes primary and may write
	primary.st.CloseSend()
	if m := backup.next("backup promoted", isArb); m.Arbitration.Status.Code != int32(codes.OK) || m.Arbitration.ElectionID.Low != 5 {
		t.Fatalf("after the primary left: %+v", m.Arbitration)
	}
	r.mustWrite(5, del(dmacEntry(t, info, b, 0)))
	t.Logf("packet-in payload %s", hex.EncodeToString(ll[:14]))
}

func TestP4RuntimeTernaryRegistersClones(t *testing.T) {
	r := newRig(t)
	r.stream(1).next("arbitration", isArb)
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "acl.p4"), nil, 0); err != nil {
		t.Fatal(err)
	}
	info := r.info()
	acl := tableID(t, info, "acl")
	deny := actionID(t, acl, "deny")
	key := func(name string) *p4info.KeyLayout {
		k := acl.Key(name)
		if k == nil {
			t.Fatalf("acl has no key %s", name)
		}
		return k
	}
	entry := &Entity{TableEntry: &TableEntry{TableID: acl.ID, Priority: 10,
		Match: []*FieldMatch{
			{FieldID: key("hdr.ipv4.srcAddr").ID, Kind: "ternary", Value: []byte{198, 18, 0, 0}, Mask: []byte{255, 255, 0, 0}},
			{FieldID: key("meta.dport").ID, Kind: "range", Low: []byte{0x04, 0x00}, High: []byte{0x08, 0x00}},
		},
		Action: &TableAction{Action: &Action{ActionID: deny.ID}}}}
	r.mustWrite(1, insert(entry))
	got := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: acl.ID}})
	if len(got) != 1 {
		t.Fatalf("read %d entries", len(got))
	}
	te := got[0].TableEntry
	// the don't-care fields (dstAddr, protocol) are left out
	if te.Priority != 10 || len(te.Match) != 2 || te.Action.Action.ActionID != deny.ID {
		t.Fatalf("entry %+v", te)
	}
	for _, fm := range te.Match {
		switch fm.FieldID {
		case key("hdr.ipv4.srcAddr").ID:
			if fm.Kind != "ternary" || !bytes.Equal(fm.Value, []byte{198, 18, 0, 0}) || !bytes.Equal(fm.Mask, []byte{255, 255, 0, 0}) {
				t.Fatalf("ternary %+v", fm)
			}
		case key("meta.dport").ID:
			if fm.Kind != "range" || !bytes.Equal(fm.Low, []byte{4, 0}) || !bytes.Equal(fm.High, []byte{8, 0}) {
				t.Fatalf("range %+v", fm)
			}
		}
	}
	noPrio := *entry.TableEntry
	noPrio.Priority = 0
	wantCode(t, "ternary entry without a priority", r.write(1, insert(&Entity{TableEntry: &noPrio})), codes.InvalidArgument)
	outside := *entry.TableEntry
	outside.Priority = 11
	outside.Match = []*FieldMatch{{FieldID: key("hdr.ipv4.srcAddr").ID, Kind: "ternary", Value: []byte{198, 18, 0, 1}, Mask: []byte{255, 255, 0, 0}}}
	wantCode(t, "ternary value outside its mask", r.write(1, insert(&Entity{TableEntry: &outside})), codes.InvalidArgument)
	wrongKind := *entry.TableEntry
	wrongKind.Match = []*FieldMatch{{FieldID: key("hdr.ipv4.srcAddr").ID, Kind: "exact", Value: []byte{1}}}
	wantCode(t, "exact value for a ternary field", r.write(1, insert(&Entity{TableEntry: &wrongKind})), codes.InvalidArgument)
	if cl := tableID(t, info, "classify"); cl.Kind == "const" {
		wantCode(t, "const table", r.write(1, insert(&Entity{TableEntry: &TableEntry{TableID: cl.ID}})), codes.PermissionDenied)
	}
	// counters: every cell of verdicts, zero so far
	ctrs := r.mustRead(&Entity{CounterEntry: &CounterEntry{}})
	if len(ctrs) != 4 || ctrs[3].CounterEntry.Index.Index != 3 || ctrs[0].CounterEntry.Data == nil {
		t.Fatalf("counters %+v", ctrs)
	}
	// counter writes: one cell, then a reset of every cell
	verdicts := ctrs[0].CounterEntry.CounterID
	r.mustWrite(1, modify(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts, Index: &Index{Index: 2}, Data: &CounterData{PacketCount: 7, ByteCount: 700}}}))
	if c := r.mustRead(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts, Index: &Index{Index: 2}}}); *c[0].CounterEntry.Data != (CounterData{PacketCount: 7, ByteCount: 700}) {
		t.Fatalf("counter cell after a write %+v", c[0].CounterEntry.Data)
	}
	r.mustWrite(1, modify(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts}}))
	for _, c := range r.mustRead(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts}}) {
		if *c.CounterEntry.Data != (CounterData{}) {
			t.Fatalf("cell %d after a reset: %+v", c.CounterEntry.Index.Index, c.CounterEntry.Data)
		}
	}
	wantCode(t, "counter INSERT", r.write(1, insert(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts}})), codes.InvalidArgument)
	wantCode(t, "counter index past the end", r.write(1, modify(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts, Index: &Index{Index: 4}}})), codes.InvalidArgument)
	wantCode(t, "negative count", r.write(1, modify(&Entity{CounterEntry: &CounterEntry{CounterID: verdicts, Data: &CounterData{PacketCount: -1}}})), codes.InvalidArgument)

	// another program on the same device (VERIFY_AND_COMMIT: entries go)
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "portscan.p4"), nil, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(r.eng.Entries(tenant.Admin, "sw", "entries")); n != 0 {
		t.Fatalf("%d entries left after VERIFY_AND_COMMIT", n)
	}
	info = r.info()
	reg := info.Edgenf.Register("last_port")
	cell := &Entity{RegisterEntry: &RegisterEntry{RegisterID: reg.ID, Index: &Index{Index: 3}, Data: &P4Data{Kind: "bitstring", Bitstring: []byte{0x12, 0x34}}}}
	r.mustWrite(1, modify(cell))
	cells := r.mustRead(&Entity{RegisterEntry: &RegisterEntry{RegisterID: reg.ID, Index: &Index{Index: 3}}})
	if len(cells) != 1 || !bytes.Equal(cells[0].RegisterEntry.Data.Bitstring, []byte{0x12, 0x34}) {
		t.Fatalf("register cell %+v", cells)
	}
	if all := r.mustRead(&Entity{RegisterEntry: &RegisterEntry{RegisterID: reg.ID}}); len(all) != reg.Size {
		t.Fatalf("register read: %d cells, want %d", len(all), reg.Size)
	}
	wide := &Entity{RegisterEntry: &RegisterEntry{RegisterID: reg.ID, Index: &Index{Index: 3}, Data: &P4Data{Kind: "bitstring", Bitstring: []byte{1, 0, 0}}}}
	wantCode(t, "17 bits into a bit<16> register", r.write(1, modify(wide)), codes.InvalidArgument)
	past := &Entity{RegisterEntry: &RegisterEntry{RegisterID: reg.ID, Index: &Index{Index: int64(reg.Size)}, Data: &P4Data{Kind: "bitstring", Bitstring: []byte{1}}}}
	wantCode(t, "register index past the end", r.write(1, modify(past)), codes.InvalidArgument)
	wantCode(t, "register insert", r.write(1, insert(cell)), codes.InvalidArgument)

	// clone session: one replica, truncated
	session := &Entity{PREEntry: &PREEntry{CloneSession: &CloneSessionEntry{SessionID: 100, Replicas: []*Replica{{Port: []byte{4}}}, PacketLengthBytes: 128}}}
	r.mustWrite(1, insert(session))
	ss := r.mustRead(&Entity{PREEntry: &PREEntry{CloneSession: &CloneSessionEntry{}}})
	if len(ss) != 1 || ss[0].PREEntry.CloneSession.SessionID != 100 || ss[0].PREEntry.CloneSession.PacketLengthBytes != 128 ||
		!bytes.Equal(ss[0].PREEntry.CloneSession.Replicas[0].Port, []byte{4}) {
		t.Fatalf("clone sessions %+v", ss)
	}
	two := &Entity{PREEntry: &PREEntry{CloneSession: &CloneSessionEntry{SessionID: 101, Replicas: []*Replica{{Port: []byte{4}}, {Port: []byte{5}}}}}}
	wantCode(t, "clone session with two replicas", r.write(1, insert(two)), codes.Unimplemented)
	// RECONCILE_AND_COMMIT keeps the forwarding state
	if err := r.setPipeline(1, ActionReconcileAndCommit, program(t, "portscan.p4"), nil, 7); err != nil {
		t.Fatal(err)
	}
	if ss := r.mustRead(&Entity{PREEntry: &PREEntry{CloneSession: &CloneSessionEntry{SessionID: 100}}}); len(ss) != 1 {
		t.Fatalf("clone sessions after RECONCILE_AND_COMMIT %+v", ss)
	}
	r.mustWrite(1, del(session))
	if ss := r.mustRead(&Entity{PREEntry: &PREEntry{CloneSession: &CloneSessionEntry{}}}); len(ss) != 0 {
		t.Fatalf("clone sessions after delete %+v", ss)
	}

	// VERIFY_AND_SAVE changes nothing until COMMIT
	wantCode(t, "COMMIT with nothing saved", r.call("SetForwardingPipelineConfig", &SetPipelineRequest{DeviceID: dev, ElectionID: &Uint128{Low: 1}, Action: ActionCommit}, &SetPipelineResponse{}), codes.FailedPrecondition)
	if err := r.setPipeline(1, ActionVerifyAndSave, program(t, "acl.p4"), nil, 8); err != nil {
		t.Fatal(err)
	}
	if r.info().Edgenf.Table("acl") != nil {
		t.Fatal("VERIFY_AND_SAVE changed the program")
	}
	if err := r.call("SetForwardingPipelineConfig", &SetPipelineRequest{DeviceID: dev, ElectionID: &Uint128{Low: 1}, Action: ActionCommit}, &SetPipelineResponse{}); err != nil {
		t.Fatal(err)
	}
	var cookie GetPipelineResponse
	if err := r.call("GetForwardingPipelineConfig", &GetPipelineRequest{DeviceID: dev, ResponseType: ResponseCookieOnly}, &cookie); err != nil {
		t.Fatal(err)
	}
	if r.info().Edgenf.Table("acl") == nil || cookie.Config.Cookie == nil || cookie.Config.Cookie.Cookie != 8 || cookie.Config.HasP4Info {
		t.Fatalf("after COMMIT: cookie %+v, p4info %v", cookie.Config.Cookie, cookie.Config.HasP4Info)
	}
}

func TestP4RuntimeMeters(t *testing.T) {
	r := newRig(t)
	r.stream(3).next("arbitration", isArb)
	src, err := os.ReadFile("../p4/testdata/meters.p4")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.setPipeline(3, ActionVerifyAndCommit, src, nil, 0); err != nil {
		t.Fatal(err)
	}
	m := r.info().Edgenf.Meter("pkt_meter")
	cfg := &MeterConfig{CIR: 100, CBurst: 10, PIR: 200, PBurst: 20}
	r.mustWrite(3, modify(&Entity{MeterEntry: &MeterEntry{MeterID: m.ID, Index: &Index{Index: 1}, Config: cfg}}))
	cells := r.mustRead(&Entity{MeterEntry: &MeterEntry{MeterID: m.ID}})
	if len(cells) != m.Size {
		t.Fatalf("%d meter cells, want %d", len(cells), m.Size)
	}
	for _, c := range cells {
		configured := c.MeterEntry.Config != nil
		if configured != (c.MeterEntry.Index.Index == 1) || (configured && *c.MeterEntry.Config != *cfg) {
			t.Fatalf("cell %d: %+v", c.MeterEntry.Index.Index, c.MeterEntry.Config)
		}
	}
	wantCode(t, "pir below cir", r.write(3, modify(&Entity{MeterEntry: &MeterEntry{MeterID: m.ID, Config: &MeterConfig{CIR: 200, PIR: 100}}})), codes.InvalidArgument)
	wantCode(t, "meter index past the end", r.write(3, modify(&Entity{MeterEntry: &MeterEntry{MeterID: m.ID, Index: &Index{Index: 4}, Config: cfg}})), codes.InvalidArgument)
	wantCode(t, "unknown meter id", r.write(3, modify(&Entity{MeterEntry: &MeterEntry{MeterID: 0x14000001, Config: cfg}})), codes.InvalidArgument)
	// no config: unconfigured again
	r.mustWrite(3, modify(&Entity{MeterEntry: &MeterEntry{MeterID: m.ID, Index: &Index{Index: 1}}}))
	if c := r.mustRead(&Entity{MeterEntry: &MeterEntry{MeterID: m.ID, Index: &Index{Index: 1}}}); len(c) != 1 || c[0].MeterEntry.Config != nil {
		t.Fatalf("after reset %+v", c)
	}
}

func TestP4RuntimeStreamErrors(t *testing.T) {
	r := newRig(t)
	open := func() *client {
		c, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		st, err := r.conn.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
		if err != nil {
			t.Fatal(err)
		}
		return &client{t: t, st: st}
	}
	end := func(cl *client) error {
		var m StreamResponse
		return cl.st.RecvMsg(&m)
	}
	cl := open()
	cl.send(&StreamRequest{Packet: &Packet{Payload: []byte{1}}})
	wantCode(t, "packet-out before arbitration", end(cl), codes.FailedPrecondition)
	cl = open()
	cl.send(&StreamRequest{Arbitration: &Arbitration{DeviceID: 42, ElectionID: &Uint128{Low: 1}}})
	wantCode(t, "arbitration for an unknown device", end(cl), codes.NotFound)
	cl = open()
	cl.send(&StreamRequest{Arbitration: &Arbitration{DeviceID: dev}})
	wantCode(t, "arbitration without an election id", end(cl), codes.InvalidArgument)
	cl = open()
	cl.send(&StreamRequest{Arbitration: &Arbitration{DeviceID: dev, ElectionID: &Uint128{Low: 1}, Role: &Role{Name: "sdn"}}})
	wantCode(t, "a role", end(cl), codes.Unimplemented)
	// no pipeline yet: Write fails on that; no primary: the pipeline
	// cannot be set
	wantCode(t, "write without a pipeline", r.write(1), codes.FailedPrecondition)
	wantCode(t, "pipeline without a primary", r.setPipeline(1, ActionVerify, []byte("x"), nil, 0), codes.PermissionDenied)
}

// TestP4RuntimeIdleTimeout: idle_timeout_ns on a table with support_timeout
// is kept and read back; an entry no packet hits is reported to the
// primary as an IdleTimeoutNotification with its key, metadata and
// timeout; the same field on a table without support_timeout is refused.
func TestP4RuntimeIdleTimeout(t *testing.T) {
	r := newRig(t)
	primary := r.stream(10)
	primary.next("arbitration", isArb)
	if err := r.setPipeline(10, ActionVerifyAndCommit, program(t, "l2learn.p4"), nil, 1); err != nil {
		t.Fatal(err)
	}
	info := r.info()
	smac := tableID(t, info, "smac")
	noAction := actionID(t, smac, "NoAction")
	entry := &TableEntry{TableID: smac.ID, IdleTimeoutNs: int64(time.Second), Metadata: []byte("cookie"),
		Match:  []*FieldMatch{{FieldID: smac.Keys[0].ID, Kind: "exact", Value: mac("02:00:00:00:00:0c")}},
		Action: &TableAction{Action: &Action{ActionID: noAction.ID}}}
	r.mustWrite(10, insert(&Entity{TableEntry: entry}))
	got := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: smac.ID}})
	if len(got) != 1 || got[0].TableEntry.IdleTimeoutNs != int64(time.Second) || got[0].TableEntry.TimeSinceLastHit != nil {
		t.Fatalf("read back %+v, want idle_timeout_ns 1e9 and no time_since_last_hit (not asked for)", got)
	}
	ask := int64(0)
	time.Sleep(200 * time.Millisecond)
	got = r.mustRead(&Entity{TableEntry: &TableEntry{TableID: smac.ID, TimeSinceLastHit: &ask}})
	if len(got) != 1 || got[0].TableEntry.TimeSinceLastHit == nil ||
		*got[0].TableEntry.TimeSinceLastHit < int64(200*time.Millisecond) || *got[0].TableEntry.TimeSinceLastHit > int64(10*time.Second) {
		t.Fatalf("read with time_since_last_hit %+v, want 0.2..10 s since the insert", got[0].TableEntry)
	}
	bad := dmacEntry(t, info, "02:00:00:00:00:0d", 1)
	bad.TableEntry.IdleTimeoutNs = int64(time.Second)
	wantCode(t, "idle timeout on a table without support_timeout", r.write(10, insert(bad)), codes.InvalidArgument)

	m := primary.next("idle timeout notification", func(m *StreamResponse) bool { return m.IdleTimeout != nil })
	n := m.IdleTimeout
	if len(n.TableEntry) != 1 || n.Timestamp == 0 {
		t.Fatalf("notification %+v", n)
	}
	te := n.TableEntry[0]
	if te.TableID != smac.ID || len(te.Match) != 1 || !bytes.Equal(te.Match[0].Value, mac("02:00:00:00:00:0c")) ||
		te.IdleTimeoutNs != int64(time.Second) || string(te.Metadata) != "cookie" {
		t.Fatalf("notified entry %+v", te)
	}
}

// BenchmarkWriteEntry: one table entry per Write RPC, into a table that
// already holds the entries of the previous iterations: the device keeps
// its index of stored entries across writes, so a write does not re-read
// the whole table.
func BenchmarkWriteEntry(b *testing.B) {
	r := newRig(b)
	primary := r.stream(10)
	primary.next("arbitration", isArb)
	if err := r.setPipeline(10, ActionVerifyAndCommit, program(b, "l2learn.p4"), nil, 1); err != nil {
		b.Fatal(err)
	}
	info := r.info()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst := fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
		r.mustWrite(10, insert(dmacEntry(b, info, dst, 1)))
	}
}

func mustProto(t *testing.T, m *p4info.P4Info) []byte {
	t.Helper()
	b, err := m.ProtoBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
