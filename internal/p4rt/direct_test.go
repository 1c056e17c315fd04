package p4rt

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/state"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/testenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

// l2switchEntry is an entry of l2switch's mac_table (vid 0, dst), to port.
func l2switchEntry(t *testing.T, r *rig, dst string, port byte) (*Entity, *TableEntry) {
	tl := tableID(t, r.info(), "SwIngress.mac_table")
	a := actionID(t, tl, "SwIngress.forward")
	key := &TableEntry{TableID: tl.ID, Match: []*FieldMatch{
		{FieldID: tl.Key("vid").ID, Kind: "exact", Value: []byte{0}},
		{FieldID: tl.Key("dst").ID, Kind: "exact", Value: mac(dst)}}}
	e := *key
	e.Action = &TableAction{Action: &Action{ActionID: a.ID, Params: []*Param{{ParamID: a.Params[0].ID, Value: []byte{port}}}}}
	return &Entity{TableEntry: &e}, key
}

// TestP4RuntimeDirectCounters: a table entry's direct counter counts the
// frames that hit it, read as a DirectCounterEntry and with the entry
// (counter_data); a controller writes and resets it; bad writes change
// nothing.
func TestP4RuntimeDirectCounters(t *testing.T) {
	r := newRig(t)
	r.stream(1).next("arbitration", isArb)
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "l2switch.p4"), nil, 0); err != nil {
		t.Fatal(err)
	}
	r.addPorts()
	const dst = "02:00:00:00:00:0b"
	entry, key := l2switchEntry(t, r, dst, 2)
	r.mustWrite(1, insert(entry))
	f := frame(dst, "02:00:00:00:00:0a")
	for range 3 {
		if err := r.eng.Inject(tenant.Admin, "sw", "p1", f, false); err != nil {
			t.Fatal(err)
		}
	}
	if !r.waitTx(2, 3) {
		t.Fatalf("%d frames out of port 2, want 3", r.txPackets(2))
	}
	want := CounterData{PacketCount: 3, ByteCount: 3 * int64(len(f))}
	got := r.mustRead(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}})
	if len(got) != 1 || got[0].DirectCounterEntry.Counter == nil || *got[0].DirectCounterEntry.Counter != want {
		t.Fatalf("direct counter %+v, want %+v", got, want)
	}
	if te := got[0].DirectCounterEntry.TableEntry; te == nil || te.TableID != key.TableID || len(te.Match) != 2 {
		t.Fatalf("the direct counter's entry %+v", te)
	}
	// every entry of the table (wildcard), and the entry with its counter
	if all := r.mustRead(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: &TableEntry{TableID: key.TableID}}}); len(all) != 1 {
		t.Fatalf("wildcard read: %d direct counters", len(all))
	}
	ents := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: key.TableID, CounterData: &CounterData{}}})
	if len(ents) != 1 || ents[0].TableEntry.CounterData == nil || *ents[0].TableEntry.CounterData != want {
		t.Fatalf("entry with counter_data %+v", ents)
	}
	if plain := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: key.TableID}}); plain[0].TableEntry.CounterData != nil {
		t.Fatal("counter_data sent unasked")
	}

	// write, then reset
	r.mustWrite(1, modify(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key, Counter: &CounterData{PacketCount: 10, ByteCount: 1000}}}))
	if got := r.mustRead(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}}); *got[0].DirectCounterEntry.Counter != (CounterData{PacketCount: 10, ByteCount: 1000}) {
		t.Fatalf("after the write %+v", got[0].DirectCounterEntry.Counter)
	}
	r.mustWrite(1, modify(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}}))
	if got := r.mustRead(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}}); *got[0].DirectCounterEntry.Counter != (CounterData{}) {
		t.Fatalf("after the reset %+v", got[0].DirectCounterEntry.Counter)
	}
	// the entry keeps forwarding and counting
	if err := r.eng.Inject(tenant.Admin, "sw", "p1", f, false); err != nil {
		t.Fatal(err)
	}
	if !r.waitTx(2, 4) {
		t.Fatal("the entry stopped forwarding after the counter write")
	}
	if got := r.mustRead(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}}); got[0].DirectCounterEntry.Counter.PacketCount != 1 {
		t.Fatalf("after one more frame %+v", got[0].DirectCounterEntry.Counter)
	}

	// an INSERT with counter_data starts the counter there
	other, otherKey := l2switchEntry(t, r, "02:00:00:00:00:0c", 1)
	other.TableEntry.CounterData = &CounterData{PacketCount: 42}
	r.mustWrite(1, insert(other))
	if got := r.mustRead(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: otherKey}}); got[0].DirectCounterEntry.Counter.PacketCount != 42 {
		t.Fatalf("inserted with counter_data: %+v", got[0].DirectCounterEntry.Counter)
	}

	wantCode(t, "direct counter INSERT", r.write(1, insert(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}})), codes.InvalidArgument)
	wantCode(t, "direct counter DELETE", r.write(1, del(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key}})), codes.InvalidArgument)
	_, missing := l2switchEntry(t, r, "02:00:00:00:00:99", 1)
	wantCode(t, "direct counter of no entry", r.write(1, modify(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: missing}})), codes.NotFound)
	wantCode(t, "negative count", r.write(1, modify(&Entity{DirectCounterEntry: &DirectEntry{TableEntry: key, Counter: &CounterData{PacketCount: -1}}})), codes.InvalidArgument)
	bad, badKey := l2switchEntry(t, r, "02:00:00:00:00:0d", 1)
	bad.TableEntry.CounterData = &CounterData{ByteCount: -5}
	wantCode(t, "insert with a negative counter", r.write(1, insert(bad)), codes.InvalidArgument)
	if got := r.mustRead(&Entity{TableEntry: badKey}); len(got) != 0 {
		t.Fatal("a refused insert left its entry")
	}
	bad.TableEntry.CounterData, bad.TableEntry.MeterConfig = nil, &MeterConfig{CIR: 1, PIR: 1}
	wantCode(t, "meter_config on a table without a direct meter", r.write(1, insert(bad)), codes.InvalidArgument)
	wantCode(t, "direct meter of a table without one", r.write(1, modify(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key}})), codes.InvalidArgument)
}

// TestP4RuntimeDirectMeters: a table entry's direct meter is configured,
// read back and reset over P4Runtime.
func TestP4RuntimeDirectMeters(t *testing.T) {
	r := newRig(t)
	r.stream(1).next("arbitration", isArb)
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "meter_te.p4"), nil, 0); err != nil {
		t.Fatal(err)
	}
	tl := tableID(t, r.info(), "TeIngress.flows")
	a := actionID(t, tl, "TeIngress.route")
	key := &TableEntry{TableID: tl.ID, Match: []*FieldMatch{
		{FieldID: tl.Key("hdr.ipv4.srcAddr").ID, Kind: "exact", Value: []byte{198, 18, 0, 1}},
		{FieldID: tl.Key("hdr.ipv4.dstAddr").ID, Kind: "exact", Value: []byte{198, 18, 0, 2}}}}
	e := *key
	e.Action = &TableAction{Action: &Action{ActionID: a.ID, Params: []*Param{{ParamID: a.Params[0].ID, Value: []byte{1}}, {ParamID: a.Params[1].ID, Value: []byte{2}}}}}
	r.mustWrite(1, insert(&Entity{TableEntry: &e}))
	if got := r.mustRead(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key}}); len(got) != 1 || got[0].DirectMeterEntry.Meter != nil {
		t.Fatalf("a new entry's meter: %+v", got)
	}
	cfg := MeterConfig{CIR: 1000, CBurst: 1500, PIR: 2000, PBurst: 3000}
	r.mustWrite(1, modify(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key, Meter: &cfg}}))
	got := r.mustRead(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: &TableEntry{}}})
	if len(got) != 1 || got[0].DirectMeterEntry.Meter == nil || *got[0].DirectMeterEntry.Meter != cfg {
		t.Fatalf("direct meter %+v, want %+v", got, cfg)
	}
	ents := r.mustRead(&Entity{TableEntry: &TableEntry{TableID: tl.ID, MeterConfig: &MeterConfig{}}})
	if len(ents) != 1 || ents[0].TableEntry.MeterConfig == nil || *ents[0].TableEntry.MeterConfig != cfg {
		t.Fatalf("entry with meter_config %+v", ents)
	}
	wantCode(t, "pir below cir", r.write(1, modify(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key, Meter: &MeterConfig{CIR: 5, PIR: 1}}})), codes.InvalidArgument)
	if got := r.mustRead(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key}}); *got[0].DirectMeterEntry.Meter != cfg {
		t.Fatal("a refused meter write changed the meter")
	}
	r.mustWrite(1, modify(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key}}))
	if got := r.mustRead(&Entity{DirectMeterEntry: &DirectEntry{TableEntry: key}}); got[0].DirectMeterEntry.Meter != nil {
		t.Fatalf("after the reset %+v", got[0].DirectMeterEntry.Meter)
	}
}

// TestP4RuntimeCookieAndReplicaForms: the pipeline cookie is a full
// uint64 whatever else changes the cube's P4Runtime state (digests), and
// lives in the cube's runtime state, not its settings; replicas are read
// back in the form they were written in.
func TestP4RuntimeCookieAndReplicaForms(t *testing.T) {
	r := newRig(t)
	r.stream(1).next("arbitration", isArb)
	const cookie = 0xfedc_ba98_7654_3211 // not a float64
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "l2learn.p4"), nil, cookie); err != nil {
		t.Fatal(err)
	}
	info := r.info()
	r.mustWrite(1, insert(&Entity{DigestEntry: &DigestEntry{DigestID: info.Digests[0].Preamble.ID, Config: &DigestConfig{MaxListSize: 1}}}))
	var got GetPipelineResponse
	if err := r.call("GetForwardingPipelineConfig", &GetPipelineRequest{DeviceID: dev, ResponseType: ResponseCookieOnly}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Config.Cookie == nil || got.Config.Cookie.Cookie != cookie {
		t.Fatalf("cookie %+v, want %#x", got.Config.Cookie, uint64(cookie))
	}
	c, _ := r.eng.CubeHeader(tenant.Admin, "sw")
	st, err := p4nf.RuntimeState(c)
	if err != nil || st.Cookie == nil || *st.Cookie != cookie || len(st.Digests) != 1 {
		t.Fatalf("runtime state %+v %v", st, err)
	}
	if string(c.Runtime[p4nf.RuntimeKey]) == "" || strings.Contains(string(c.Config), "p4runtime") || strings.Contains(string(c.Config), "cookie") {
		t.Fatalf("settings %s, runtime %s", c.Config, c.Runtime)
	}

	// replicas: egress_port in, egress_port out; port in, port out
	r.mustWrite(1, insert(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{GroupID: 1,
		Replicas: []*Replica{{EgressPort: 1}, {EgressPort: 2, Instance: 3}}}}}))
	r.mustWrite(1, insert(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{GroupID: 2,
		Replicas: []*Replica{{Port: []byte{1}}, {Port: []byte{2}}}}}}))
	groups := r.mustRead(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{}}})
	if len(groups) != 2 {
		t.Fatalf("%d groups", len(groups))
	}
	for _, g := range groups {
		mg := g.PREEntry.MulticastGroup
		for i, rep := range mg.Replicas {
			old := mg.GroupID == 1
			if old && (rep.Port != nil || rep.EgressPort != uint32(i+1)) || !old && (rep.EgressPort != 0 || len(rep.Port) != 1 || rep.Port[0] != byte(i+1)) {
				t.Errorf("group %d replica %d: %+v", mg.GroupID, i, rep)
			}
		}
	}
	// rewritten in the new form: read in the new form
	r.mustWrite(1, modify(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{GroupID: 1, Replicas: []*Replica{{Port: []byte{2}}}}}}))
	g1 := r.mustRead(&Entity{PREEntry: &PREEntry{MulticastGroup: &MulticastGroupEntry{GroupID: 1}}})
	if rep := g1[0].PREEntry.MulticastGroup.Replicas[0]; rep.Port == nil || rep.Port[0] != 2 {
		t.Fatalf("group 1 after MODIFY with port: %+v", rep)
	}
	// a new pipeline: the cookie changes, digests and replica forms go
	if err := r.setPipeline(1, ActionVerifyAndCommit, program(t, "l2learn.p4"), nil, 1); err != nil {
		t.Fatal(err)
	}
	c, _ = r.eng.CubeHeader(tenant.Admin, "sw")
	if st, _ := p4nf.RuntimeState(c); st.Cookie == nil || *st.Cookie != 1 || st.Digests != nil || st.EgressPortGroups != nil {
		t.Fatalf("runtime state after a new pipeline %+v", st)
	}
}

// TestP4RuntimeStateOfAnOlderVersion: a state file written by a version
// that kept the P4Runtime cookie and digests in the p4 settings is read
// into the cube's runtime state at start, the cookie exact above 2^53, and
// served as before.
func TestP4RuntimeStateOfAnOlderVersion(t *testing.T) {
	testenv.NeedRoot(t)
	cfg := engine.Config{
		PinRoot:   filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfp4rt-%d", os.Getpid())),
		StateFile: filepath.Join(t.TempDir(), "state.json"),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	t.Cleanup(func() { engine.DestroyAt(cfg) })
	eng, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conf, _ := json.Marshal(map[string]any{"program": "l2learn.p4", "source": string(program(t, "l2learn.p4"))})
	nftest.MustUpdate(t, eng, func(top *cube.Topology) error {
		return top.AddCube(&cube.Cube{Name: "sw", Type: "p4", Hook: datapath.XDP, Config: conf})
	})
	info := func(e *engine.Engine) *p4info.P4Info {
		v, err := e.View(tenant.Admin, "sw", "p4info")
		if err != nil {
			t.Fatal(err)
		}
		return v.(*p4info.P4Info)
	}
	digest := info(eng).Digests[0].Preamble.ID
	eng.Close()

	// the settings as the older version wrote them
	f, err := state.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	old := strings.TrimSuffix(string(f.Topology.Lookup("sw").Config), "}") +
		fmt.Sprintf(`,"p4runtime_cookie":18364758544493064721,"p4runtime_digests":[{"id":%d,"max_list_size":4}]}`, digest)
	f.Topology.Lookup("sw").Config = json.RawMessage(old)
	f.Topology.Lookup("sw").Runtime = nil
	if err := state.Save(cfg.StateFile, f); err != nil {
		t.Fatal(err)
	}
	os.Remove(state.JournalPath(cfg.StateFile))

	eng, err = engine.Open(cfg)
	if err != nil {
		t.Fatalf("the older state does not load: %v", err)
	}
	defer eng.Close()
	c, _ := eng.CubeHeader(tenant.Admin, "sw")
	if strings.Contains(string(c.Config), "p4runtime") {
		t.Fatalf("the settings still hold P4Runtime state: %s", c.Config)
	}
	srv := New(Config{Engine: eng, Devices: map[uint64]string{dev: "sw"}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Stop()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(Codec)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := &rig{t: t, eng: eng, conn: conn}
	var got GetPipelineResponse
	if err := r.call("GetForwardingPipelineConfig", &GetPipelineRequest{DeviceID: dev, ResponseType: ResponseCookieOnly}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Config.Cookie == nil || got.Config.Cookie.Cookie != 18364758544493064721 {
		t.Fatalf("cookie %+v, want 18364758544493064721", got.Config.Cookie)
	}
	ds := r.mustRead(&Entity{DigestEntry: &DigestEntry{}})
	if len(ds) != 1 || ds[0].DigestEntry.DigestID != digest || ds[0].DigestEntry.Config.MaxListSize != 4 {
		t.Fatalf("digests %+v", ds)
	}
}
