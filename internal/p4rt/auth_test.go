package p4rt

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/tlsauth"
	"github.com/edgenf/edgenf/internal/tlsauth/tlstest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const redToken = "red-token-0123456789abcdef"

// tlsRig serves devices 1 (sw, the administrator's), 2 (red1, tenant
// red's) and 3 (blue1, tenant blue's) over TLS with client certificates
// of ca and one token of tenant red.
type tlsRig struct {
	t    *testing.T
	eng  *engine.Engine
	addr string
	ca   *tlstest.CA
}

func newTLSRig(t *testing.T) *tlsRig { return newTLSRigWith(t, nftest.Engine(t)) }

func newTLSRigWith(t *testing.T, eng *engine.Engine) *tlsRig {
	ca := tlstest.NewCA(t, "p4rt")
	pair := ca.Server("p4rt")
	cfg, err := tlsauth.ServerConfig(tlsauth.ServerFiles{Cert: pair.Cert, Key: pair.Key, ClientCA: ca.File}, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Engine: eng,
		Devices: map[uint64]string{1: "sw", 2: "red1", 3: "blue1"},
		Tenants: map[uint64]string{2: "red", 3: "blue"},
		Tokens: func(tok string) (tlsauth.Identity, bool) {
			return tlsauth.Identity{Tenant: "red"}, tok == redToken
		}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(l, cfg)
	t.Cleanup(srv.Stop)
	return &tlsRig{t: t, eng: eng, addr: l.Addr().String(), ca: ca}
}

// conn dials as the identity uri names ("": no client certificate).
func (r *tlsRig) conn(uri string) *grpc.ClientConn {
	f := tlsauth.ClientFiles{CA: r.ca.File}
	if uri != "" {
		p := r.ca.Client(strings.NewReplacer("/", "_", ":", "_").Replace(uri), tlstest.Subject{URIs: []string{uri}})
		f.Cert, f.Key = p.Cert, p.Key
	}
	cfg, err := tlsauth.ClientConfig(f)
	if err != nil {
		r.t.Fatal(err)
	}
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(Codec)))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { conn.Close() })
	return conn
}

func getPipeline(ctx context.Context, conn *grpc.ClientConn, device uint64) error {
	return conn.Invoke(ctx, "/p4.v1.P4Runtime/GetForwardingPipelineConfig",
		&GetPipelineRequest{DeviceID: device, ResponseType: ResponseCookieOnly}, &GetPipelineResponse{})
}

// TestTLSDevicesAreBoundToTenants: over TLS a tenant's certificate (or
// token) reaches its own devices only, is told nothing of the others, and
// loses a device whose cube the administrator gave to another tenant; the
// administrator reaches every device; no credentials, no access.
func TestTLSDevicesAreBoundToTenants(t *testing.T) {
	r := newTLSRig(t)
	red, admin, anon := r.conn("edgenf://tenant/red"), r.conn("edgenf://admin"), r.conn("")
	c := ctx(t)

	var caps CapabilitiesResponse
	if err := red.Invoke(c, "/p4.v1.P4Runtime/Capabilities", &CapabilitiesRequest{}, &caps); err != nil {
		t.Fatal(err)
	}
	// its own device passes the check (and has no pipeline yet)
	wantCode(t, "red, device 2", getPipeline(c, red, 2), codes.FailedPrecondition)
	for _, d := range []uint64{1, 3, 99} {
		err := getPipeline(c, red, d)
		wantCode(t, "red, another device", err, codes.NotFound)
		if msg := status.Convert(err).Message(); strings.Contains(msg, "blue") || strings.Contains(msg, "sw") || !strings.Contains(msg, "2 (red1)") {
			t.Errorf("red is told %q", msg)
		}
	}
	for _, d := range []uint64{1, 2, 3} {
		wantCode(t, "admin", getPipeline(c, admin, d), codes.FailedPrecondition)
	}
	wantCode(t, "no credentials", getPipeline(c, anon, 2), codes.Unauthenticated)
	withTok := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(c, "authorization", "Bearer "+tok)
	}
	wantCode(t, "red's token", getPipeline(withTok(redToken), anon, 2), codes.FailedPrecondition)
	wantCode(t, "red's token, blue's device", getPipeline(withTok(redToken), anon, 3), codes.NotFound)
	wantCode(t, "a wrong token", getPipeline(withTok("nope-0123456789abcdef"), anon, 2), codes.Unauthenticated)
	wantCode(t, "red's token with the admin's certificate", getPipeline(withTok(redToken), admin, 2), codes.Unauthenticated)

	// a stream of red's arbitrating for blue's device ends NOT_FOUND
	st, err := red.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
	if err != nil {
		t.Fatal(err)
	}
	st.SendMsg(&StreamRequest{Arbitration: &Arbitration{DeviceID: 3, ElectionID: &Uint128{Low: 1}}})
	wantCode(t, "red arbitrating for device 3", st.RecvMsg(&StreamResponse{}), codes.NotFound)

	// the administrator gives red1's name to blue: red loses device 2
	nftest.MustUpdate(t, r.eng, func(tp *cube.Topology) error {
		return tp.AddCube(&cube.Cube{Name: "red1", Type: "portfwd", Hook: datapath.XDP, Tenant: "blue"})
	})
	wantCode(t, "red, device 2 whose cube is blue's", getPipeline(c, red, 2), codes.PermissionDenied)
}

// TestTenantPipelineCreatesTenantCube: a pipeline a tenant commits to its
// device creates the cube in the tenant.
func TestTenantPipelineCreatesTenantCube(t *testing.T) {
	r := newTLSRig(t)
	red := r.conn("edgenf://tenant/red")
	c := ctx(t)
	primary(t, c, red, 2)
	err := red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", &SetPipelineRequest{DeviceID: 2, ElectionID: &Uint128{Low: 1},
		Action: ActionVerifyAndCommit, Config: &PipelineConfig{DeviceConfig: program(t, "l2switch.p4")}}, &SetPipelineResponse{})
	if err != nil {
		t.Fatal(err)
	}
	if cb, ok := r.eng.CubeHeader(tenant.Admin, "red1"); !ok || cb.Tenant != "red" || cb.Type != "p4" {
		t.Fatalf("cube red1: %+v %v", cb, ok)
	}
}

// TestTenantCallsActAsTheDevicesTenant: every engine call a tenant's device
// makes acts as the tenant, so the engine checks the cube's tenant when it
// is used, and red's quotas apply (table entries). A stream red opened
// while its cube was red's keeps running when the administrator gives the
// cube to blue; from then on red's packet-outs are refused and never reach
// the cube, its stream gets none of the cube's packet-ins, and its writes
// and pipelines are refused.
func TestTenantCallsActAsTheDevicesTenant(t *testing.T) {
	r := newTLSRig(t)
	red := r.conn("edgenf://tenant/red")
	c := ctx(t)
	st, err := red.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{t: t, st: st, in: make(chan *StreamResponse, 64)}
	go func() {
		defer close(cl.in)
		for {
			m := &StreamResponse{}
			if err := st.RecvMsg(m); err != nil {
				return
			}
			cl.in <- m
		}
	}()
	cl.send(&StreamRequest{Arbitration: &Arbitration{DeviceID: 2, ElectionID: &Uint128{Low: 1}}})
	cl.next("arbitration", isArb)
	setPipeline := &SetPipelineRequest{DeviceID: 2, ElectionID: &Uint128{Low: 1}, Action: ActionVerifyAndCommit,
		Config: &PipelineConfig{DeviceConfig: program(t, "l2learn.p4")}}
	if err := red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", setPipeline, &SetPipelineResponse{}); err != nil {
		t.Fatal(err)
	}
	// red1's port 2 leads to a cube that counts what it receives
	nftest.MustUpdate(t, r.eng, func(tp *cube.Topology) error {
		if err := tp.AddCube(&cube.Cube{Name: "sink", Type: "portfwd", Hook: datapath.XDP, Tenant: "red", Ports: []cube.Port{{Name: "p0", Index: 0}}}); err != nil {
			return err
		}
		if err := tp.AddPort("red1", cube.Port{Name: "p1", Index: 1}); err != nil {
			return err
		}
		return tp.AddPort("red1", cube.Port{Name: "p2", Index: 2, Peer: "sink:p0"})
	})
	received := func() uint64 {
		st, err := r.eng.Stats(tenant.Admin, "sink")
		if err != nil {
			t.Fatal(err)
		}
		return st.Ports[0].RxPackets
	}
	info, err := r.eng.View(tenant.Admin, "red1", "p4info")
	if err != nil {
		t.Fatal(err)
	}
	pout := info.(*p4info.P4Info).Edgenf.SlowPath.PacketOut
	packetOut := &StreamRequest{Packet: &Packet{Payload: frame("02:00:00:00:00:0b", "02:00:00:00:00:0a"),
		Metadata: []*PacketMetadata{{MetadataID: pout.Fields[0].ID, Value: []byte{2}}}}}
	cl.send(packetOut)
	for i := 0; received() < 1; i++ {
		if i == 100 {
			t.Fatal("red's packet-out did not come out of port 2")
		}
		time.Sleep(20 * time.Millisecond)
	}
	linkLocal := frame("01:80:c2:00:00:0e", "02:00:00:00:00:0a")
	if err := r.eng.Inject(tenant.Admin, "red1", "p1", linkLocal, false); err != nil {
		t.Fatal(err)
	}
	cl.next("packet-in while the cube is red's", func(m *StreamResponse) bool { return m.Packet != nil })

	// red's packet-outs are frames it injects: its injects_per_second
	// bounds them (here none at all)
	if _, err := r.eng.SetTenant(tenant.Tenant{Name: "red", Quota: tenant.Quota{tenant.InjectsPerSecond: 0}}); err != nil {
		t.Fatal(err)
	}
	cl.send(packetOut)
	if m := cl.next("packet-out over red's rate", func(m *StreamResponse) bool { return m.Error != nil }); m.Error.CanonicalCode != int32(codes.ResourceExhausted) ||
		!strings.Contains(m.Error.Message, "over quota injects_per_second: limit 0") {
		t.Fatalf("packet-out over red's rate: %+v", m.Error)
	}
	if n := received(); n != 1 {
		t.Fatalf("%d frames out of port 2, want the one packet-out within red's rate", n)
	}

	// red's writes count against its table entry quota
	if _, err := r.eng.SetTenant(tenant.Tenant{Name: "red", Quota: tenant.Quota{tenant.TableEntries: 1}}); err != nil {
		t.Fatal(err)
	}
	tl := info.(*p4info.P4Info).Edgenf.Table("dmac")
	fwd := tl.Action("forward")
	dmac := func(dst string) *Update {
		return insert(&Entity{TableEntry: &TableEntry{TableID: tl.ID, Match: []*FieldMatch{{FieldID: tl.Keys[0].ID, Kind: "exact", Value: mac(dst)}},
			Action: &TableAction{Action: &Action{ActionID: fwd.ID, Params: []*Param{{ParamID: fwd.Params[0].ID, Value: []byte{2}}}}}}})
	}
	write := func(u *Update) error {
		return red.Invoke(c, "/p4.v1.P4Runtime/Write", &WriteRequest{DeviceID: 2, ElectionID: &Uint128{Low: 1}, Updates: []*Update{u}}, &WriteResponse{})
	}
	if err := write(dmac("02:00:00:00:00:0b")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "red's write over its quota", write(dmac("02:00:00:00:00:0c")), codes.ResourceExhausted)

	// the administrator gives both cubes to blue
	nftest.MustUpdate(t, r.eng, func(tp *cube.Topology) error {
		for _, name := range []string{"red1", "sink"} {
			c, err := tp.Edit(name)
			if err != nil {
				return err
			}
			c.Tenant = "blue"
		}
		return nil
	})
	cl.send(packetOut)
	if m := cl.next("packet-out into blue's cube", func(m *StreamResponse) bool { return m.Error != nil }); m.Error.CanonicalCode != int32(codes.PermissionDenied) {
		t.Fatalf("packet-out into blue's cube: %+v", m.Error)
	}
	if n := received(); n != 1 {
		t.Fatalf("red's packet-out reached blue's cube (%d frames out of port 2)", n)
	}
	if err := r.eng.Inject(tenant.Admin, "red1", "p1", linkLocal, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(2 * time.Second)
	for waiting := true; waiting; {
		select {
		case m := <-cl.in:
			if m != nil && m.Packet != nil {
				t.Fatal("red's stream got a packet-in of blue's cube")
			}
		case <-deadline:
			waiting = false
		}
	}
	wantCode(t, "red's write into blue's cube", write(dmac("02:00:00:00:00:0d")), codes.PermissionDenied)
	if rows := r.eng.Entries(tenant.Admin, "red1", "entries"); len(rows) != 1 {
		t.Fatalf("blue's cube has %d entries, want the one red wrote before: %s", len(rows), rows)
	}
	err = red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", setPipeline, &SetPipelineResponse{})
	wantCode(t, "red's pipeline into blue's cube", err, codes.PermissionDenied)
}

// TestPipelineCompilesShareTheDaemonsSlots: a tenant's pipelines compile
// in the daemon's compile slots (p4nf.CompileSlots), as cubes' programs
// do, so a tenant cannot run a compiler per call it makes at once and
// starve the machine. With every slot taken, red's VERIFY waits; once one
// is free, it compiles.
func TestPipelineCompilesShareTheDaemonsSlots(t *testing.T) {
	r := newTLSRig(t)
	red := r.conn("edgenf://tenant/red")
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	primary(t, c, red, 2)
	verify := &SetPipelineRequest{DeviceID: 2, ElectionID: &Uint128{Low: 1}, Action: ActionVerify,
		Config: &PipelineConfig{DeviceConfig: program(t, "l2switch.p4")}}
	start := time.Now()
	if err := red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", verify, &SetPipelineResponse{}); err != nil {
		t.Fatalf("VERIFY with the slots free: %v", err)
	}
	took := time.Since(start)
	for range cap(p4nf.CompileSlots) {
		p4nf.CompileSlots <- struct{}{}
	}
	held := true
	release := func() {
		if held {
			for range cap(p4nf.CompileSlots) {
				<-p4nf.CompileSlots
			}
			held = false
		}
	}
	defer release()
	done := make(chan error, 1)
	go func() {
		done <- red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", verify, &SetPipelineResponse{})
	}()
	select {
	case err := <-done:
		t.Fatalf("VERIFY with every compile slot taken returned (%v) within %v, three times what a compile took: it compiled beside them", err, 3*took+2*time.Second)
	case <-time.After(3*took + 2*time.Second):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("VERIFY once a slot was free: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("VERIFY did not finish within 60 s of the slots' release")
	}
}

// TestTenantCallsInProgressAreBounded: a tenant has at most its
// concurrent_requests quota of P4Runtime calls in progress, streams
// included, refused with RESOURCE_EXHAUSTED before their message is read;
// a call that ends gives its place back.
func TestTenantCallsInProgressAreBounded(t *testing.T) {
	eng := nftest.EngineWith(t, engine.Config{Tenants: []tenant.Tenant{{Name: "red", Quota: tenant.Quota{tenant.ConcurrentRequests: 1}}}})
	r := newTLSRigWith(t, eng)
	red, admin := r.conn("edgenf://tenant/red"), r.conn("edgenf://admin")
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc, stop := context.WithCancel(c)
	primary(t, sc, red, 2)
	err := getPipeline(c, red, 2)
	wantCode(t, "red's second call while its stream is open", err, codes.ResourceExhausted)
	if err != nil && !strings.Contains(err.Error(), "over quota concurrent_requests: limit 1, in use 1") {
		t.Errorf("the refusal does not give the quota: %v", err)
	}
	wantCode(t, "the administrator's call (its device has no pipeline)", getPipeline(c, admin, 1), codes.FailedPrecondition)
	stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := getPipeline(c, red, 2)
		if status.Code(err) != codes.ResourceExhausted {
			wantCode(t, "red's call once its stream ended (its device has no pipeline)", err, codes.FailedPrecondition)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after red's stream ended its calls are still refused: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// primary makes conn the primary client of device (election id 1) on a
// StreamChannel open while ctx lasts.
func primary(t *testing.T, ctx context.Context, conn *grpc.ClientConn, device uint64) {
	t.Helper()
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&StreamRequest{Arbitration: &Arbitration{DeviceID: device, ElectionID: &Uint128{Low: 1}}}); err != nil {
		t.Fatal(err)
	}
	var m StreamResponse
	if err := st.RecvMsg(&m); err != nil || m.Arbitration == nil {
		t.Fatalf("arbitration: %v %+v", err, m)
	}
}
