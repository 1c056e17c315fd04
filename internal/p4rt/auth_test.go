package p4rt

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/nftest"
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

func newTLSRig(t *testing.T) *tlsRig {
	eng := nftest.Engine(t)
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
	st, err := red.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&StreamRequest{Arbitration: &Arbitration{DeviceID: 2, ElectionID: &Uint128{Low: 1}}}); err != nil {
		t.Fatal(err)
	}
	var m StreamResponse
	if err := st.RecvMsg(&m); err != nil || m.Arbitration == nil {
		t.Fatalf("arbitration: %v %+v", err, m)
	}
	err = red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", &SetPipelineRequest{DeviceID: 2, ElectionID: &Uint128{Low: 1},
		Action: ActionVerifyAndCommit, Config: &PipelineConfig{DeviceConfig: program(t, "l2switch.p4")}}, &SetPipelineResponse{})
	if err != nil {
		t.Fatal(err)
	}
	if cb, ok := r.eng.CubeHeader(tenant.Admin, "red1"); !ok || cb.Tenant != "red" || cb.Type != "p4" {
		t.Fatalf("cube red1: %+v %v", cb, ok)
	}
}
