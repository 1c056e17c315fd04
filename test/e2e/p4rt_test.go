package e2e

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/p4rt"
	"github.com/edgenf/edgenf/internal/testenv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// freeAddr returns a loopback TCP address nothing listens on now.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// p4rtClient connects to a daemon's P4Runtime server on its unix socket
// (retrying while it starts) and becomes the primary of device 1.
func p4rtClient(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(p4rt.Codec)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := conn.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel",
		grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&p4rt.StreamRequest{Arbitration: &p4rt.Arbitration{DeviceID: 1, ElectionID: &p4rt.Uint128{Low: 1}}}); err != nil {
		t.Fatal(err)
	}
	var m p4rt.StreamResponse
	if err := st.RecvMsg(&m); err != nil || m.Arbitration == nil || m.Arbitration.Status.Code != 0 {
		t.Fatalf("arbitration: %+v %v", m.Arbitration, err)
	}
	return conn
}

func call(t *testing.T, conn *grpc.ClientConn, method string, in, out any) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Invoke(c, "/p4.v1.P4Runtime/"+method, in, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// bigCookie is a pipeline cookie no float64 holds exactly: a controller
// (finsy) that sees another after a restart reloads the pipeline.
const bigCookie = 0xc0ffee_0000_0001

// TestP4RuntimeAgainstTheDaemon: a P4Runtime controller programs a switch
// through edgenfd's gRPC server; what it writes is what the CLI shows, and
// survives a daemon restart, readable again through P4Runtime with its
// metadata, as the pipeline's cookie and digest configurations are.
func TestP4RuntimeAgainstTheDaemon(t *testing.T) {
	testenv.E2E(t)
	d := startDaemon(t, "-p4rt-devices", "sw1=1")
	conn := p4rtClient(t, d.p4rtSocket())
	src, err := os.ReadFile("../../examples/p4/l2learn.p4")
	if err != nil {
		t.Fatal(err)
	}
	call(t, conn, "SetForwardingPipelineConfig", &p4rt.SetPipelineRequest{DeviceID: 1, ElectionID: &p4rt.Uint128{Low: 1},
		Action: p4rt.ActionVerifyAndCommit, Config: &p4rt.PipelineConfig{DeviceConfig: src, Cookie: &p4rt.Cookie{Cookie: bigCookie}}}, &p4rt.SetPipelineResponse{})

	var info p4info.P4Info
	d.json(&info, "view", "sw1", "p4info")
	dmac := info.Edgenf.Table("dmac")
	if dmac == nil || dmac.Action("forward") == nil {
		t.Fatalf("the cube's P4Info has no dmac table with forward: %+v", info.Edgenf)
	}
	fwd := dmac.Action("forward")
	entry := &p4rt.TableEntry{TableID: dmac.ID, Metadata: []byte("controller-cookie-1"),
		Match:  []*p4rt.FieldMatch{{FieldID: dmac.Keys[0].ID, Kind: "exact", Value: []byte{2, 0, 0, 0, 0, 0x0b}}},
		Action: &p4rt.TableAction{Action: &p4rt.Action{ActionID: fwd.ID, Params: []*p4rt.Param{{ParamID: fwd.Params[0].ID, Value: []byte{2}}}}}}
	learn := info.Edgenf.SlowPath.Digest("learn_t")
	if learn == nil {
		t.Fatal("the program has no learn_t digest")
	}
	call(t, conn, "Write", &p4rt.WriteRequest{DeviceID: 1, ElectionID: &p4rt.Uint128{Low: 1},
		Updates: []*p4rt.Update{{Type: p4rt.UpdateInsert, Entity: &p4rt.Entity{TableEntry: entry}},
			{Type: p4rt.UpdateInsert, Entity: &p4rt.Entity{DigestEntry: &p4rt.DigestEntry{DigestID: learn.ID, Config: &p4rt.DigestConfig{MaxListSize: 1}}}}}}, &p4rt.WriteResponse{})

	out := d.cli("table", "list", "sw1", "entries")
	if !strings.Contains(out, "02:00:00:00:00:0b") || !strings.Contains(out, "forward") {
		t.Fatalf("the CLI does not show the entry written through P4Runtime:\n%s", out)
	}

	d.stop()
	d.start()
	conn = p4rtClient(t, d.p4rtSocket())
	st, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/p4.v1.P4Runtime/Read")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&p4rt.ReadRequest{DeviceID: 1, Entities: []*p4rt.Entity{{TableEntry: &p4rt.TableEntry{TableID: dmac.ID}}}}); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	var resp p4rt.ReadResponse
	if err := st.RecvMsg(&resp); err != nil || len(resp.Entities) != 1 {
		t.Fatalf("read after restart: %+v %v", resp.Entities, err)
	}
	got := resp.Entities[0].TableEntry
	if got.Action == nil || got.Action.Action == nil || got.Action.Action.ActionID != fwd.ID || string(got.Action.Action.Params[0].Value) != "\x02" ||
		string(got.Metadata) != "controller-cookie-1" {
		t.Fatalf("entry after restart %+v", got)
	}
	st, err = conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/p4.v1.P4Runtime/Read")
	if err != nil {
		t.Fatal(err)
	}
	must(t, st.SendMsg(&p4rt.ReadRequest{DeviceID: 1, Entities: []*p4rt.Entity{{DigestEntry: &p4rt.DigestEntry{}}}}))
	st.CloseSend()
	resp = p4rt.ReadResponse{}
	if err := st.RecvMsg(&resp); err != nil || len(resp.Entities) != 1 || resp.Entities[0].DigestEntry.DigestID != learn.ID ||
		resp.Entities[0].DigestEntry.Config.MaxListSize != 1 {
		t.Fatalf("digest configs after restart: %+v %v", resp.Entities, err)
	}
	var pl p4rt.GetPipelineResponse
	call(t, conn, "GetForwardingPipelineConfig", &p4rt.GetPipelineRequest{DeviceID: 1, ResponseType: p4rt.ResponseCookieOnly}, &pl)
	if pl.Config == nil || pl.Config.Cookie == nil || pl.Config.Cookie.Cookie != bigCookie {
		t.Fatalf("pipeline cookie after restart: %+v", pl.Config)
	}
}

// TestP4RuntimeOverTCPNeedsTLS: P4Runtime is never served over TCP in the
// clear, loopback or not; the refused daemon touches nothing.
func TestP4RuntimeOverTCPNeedsTLS(t *testing.T) {
	testenv.E2E(t)
	for _, addr := range []string{"127.0.0.1:9559", "0.0.0.0:9559"} {
		refused(t, []string{"-tls-cert and -tls-key", "-p4rt-socket"}, "-p4rt-listen", addr, "-p4rt-devices", "sw1=1", "-tokens", tokenFile(t))
	}
}
