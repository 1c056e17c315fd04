package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/p4rt"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/edgenf/edgenf/internal/tlsauth"
	"github.com/edgenf/edgenf/internal/tlsauth/tlstest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const (
	adminToken = "admin-token-0123456789abcdef"
	redToken   = "red-token-0123456789abcdef"
	blueToken  = "blue-token-0123456789abcdef"
)

// tokenFile writes the tokens of the administrator and tenants red and
// blue.
func tokenFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "tokens.json")
	b, _ := json.Marshal(map[string]any{"tokens": []map[string]string{
		{"token": adminToken}, {"token": redToken, "tenant": "red"}, {"token": blueToken, "tenant": "blue"}}})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// refused runs edgenfd with flags: it must fail, saying each of wants, and
// leave neither a bpffs root nor a state file behind.
func refused(t *testing.T, wants []string, flags ...string) {
	t.Helper()
	testenv.NeedRoot(t)
	dir := t.TempDir()
	bpffs := filepath.Join("/sys/fs/bpf", fmt.Sprintf("enfd-%d-refused-%s", os.Getpid(), filepath.Base(dir)))
	args := append([]string{"-socket", filepath.Join(dir, "s"), "-state", filepath.Join(dir, "state.json"), "-bpffs", bpffs}, flags...)
	out, err := exec.Command(filepath.Join(binDir, "edgenfd"), args...).CombinedOutput()
	if err == nil {
		exec.Command(filepath.Join(binDir, "edgenfd"), append(args, "-destroy")...).Run()
		t.Fatalf("edgenfd %v started", flags)
	}
	for _, w := range wants {
		if !strings.Contains(string(out), w) {
			t.Errorf("edgenfd %v: the refusal does not say %q:\n%s", flags, w, out)
		}
	}
	if _, err := os.Stat(bpffs); err == nil {
		os.RemoveAll(bpffs)
		t.Errorf("the refused daemon created its bpffs root %s", bpffs)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		t.Error("the refused daemon wrote a state file")
	}
}

// TestTCPListenersRefuseUnsafeSettings: a TCP API in clear text off
// loopback, one without any way to authenticate, or half a TLS
// configuration, is refused before anything is touched.
func TestTCPListenersRefuseUnsafeSettings(t *testing.T) {
	testenv.E2E(t)
	ca := tlstest.NewCA(t, "refusals")
	srv := ca.Server("edgenfd")
	toks := tokenFile(t)
	refused(t, []string{"-tls-cert", "clear text"}, "-listen", "0.0.0.0:9400", "-tokens", toks)
	refused(t, []string{"-tokens or -tls-client-ca"}, "-listen", "127.0.0.1:9400")
	refused(t, []string{"-tokens or -tls-client-ca"}, "-listen", "127.0.0.1:9400", "-tls-cert", srv.Cert, "-tls-key", srv.Key)
	refused(t, []string{"-tls-cert and -tls-key go together"}, "-listen", "127.0.0.1:9400", "-tokens", toks, "-tls-cert", srv.Cert)
	refused(t, []string{"-tls-client-ca needs -tls-cert"}, "-listen", "127.0.0.1:9400", "-tls-client-ca", ca.File)
	refused(t, []string{"-max-conns"}, "-listen", "127.0.0.1:9400", "-tokens", toks, "-max-conns", "0")
	refused(t, []string{"TLS certificate"}, "-listen", "127.0.0.1:9400", "-tokens", toks, "-tls-cert", srv.Key, "-tls-key", srv.Key)
}

// tlsDaemon is a daemon serving its API over TLS on url, with client
// certificates of ca and the tokens of tokenFile.
type tlsDaemon struct {
	*daemon
	url string
	ca  *tlstest.CA
}

func startTLSDaemon(t *testing.T, flags ...string) *tlsDaemon {
	t.Helper()
	ca := tlstest.NewCA(t, "edgenf-clients")
	srv := ca.Server("edgenfd")
	addr := freeAddr(t)
	d := startDaemon(t, append([]string{"-listen", addr, "-tokens", tokenFile(t),
		"-tls-cert", srv.Cert, "-tls-key", srv.Key, "-tls-client-ca", ca.File}, flags...)...)
	return &tlsDaemon{daemon: d, url: "https://" + addr, ca: ca}
}

// identity issues a client certificate naming uri.
func (d *tlsDaemon) identity(uri string) tlsauth.ClientFiles {
	p := d.ca.Client(strings.NewReplacer("/", "_", ":", "_").Replace(uri), tlstest.Subject{URIs: []string{uri}})
	return tlsauth.ClientFiles{CA: d.ca.File, Cert: p.Cert, Key: p.Key}
}

// remote runs the CLI against the TCP API with the given credentials.
func (d *tlsDaemon) remote(f tlsauth.ClientFiles, token string, args ...string) (string, error) {
	flags := []string{"--server", d.url}
	if f.CA != "" {
		flags = append(flags, "--ca", f.CA)
	}
	if f.Cert != "" {
		flags = append(flags, "--cert", f.Cert, "--key", f.Key)
	}
	if token != "" {
		flags = append(flags, "--token", token)
	}
	cmd := exec.Command(filepath.Join(binDir, "edgenf"), append(flags, args...)...)
	cmd.Env = append(os.Environ(), "EDGENF_SOCKET=/nonexistent")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (d *tlsDaemon) mustRemote(f tlsauth.ClientFiles, token string, args ...string) string {
	d.t.Helper()
	out, err := d.remote(f, token, args...)
	if err != nil {
		d.t.Fatalf("edgenf %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func cubeNames(t *testing.T, out string) []string {
	t.Helper()
	var cubes []struct{ Name, Tenant string }
	if err := json.Unmarshal([]byte(out), &cubes); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, c := range cubes {
		names = append(names, c.Name+"@"+c.Tenant)
	}
	return names
}

// TestAPIOverTLSWithCertificatesAndTokens: the CLI reaches the TCP API over
// TLS with a client certificate (administrator or tenant, by the URI it
// names) or a token; it refuses a server it cannot verify; a certificate
// of another CA or a clear-text client gets nothing.
func TestAPIOverTLSWithCertificatesAndTokens(t *testing.T) {
	testenv.E2E(t)
	d := startTLSDaemon(t)
	admin, red := d.identity("edgenf://admin"), d.identity("edgenf://tenant/red")
	d.mustRemote(admin, "", "cube", "add", "b1", "portfwd", "--tenant", "blue")
	d.mustRemote(red, "", "cube", "add", "r1", "portfwd")
	if got := cubeNames(t, d.mustRemote(red, "", "cube", "list", "-o", "json")); len(got) != 1 || got[0] != "r1@red" {
		t.Fatalf("red's certificate lists %v", got)
	}
	if got := cubeNames(t, d.mustRemote(tlsauth.ClientFiles{CA: d.ca.File}, blueToken, "cube", "list", "-o", "json")); len(got) != 1 || got[0] != "b1@blue" {
		t.Fatalf("blue's token lists %v", got)
	}
	if got := cubeNames(t, d.mustRemote(admin, "", "cube", "list", "-o", "json")); len(got) != 2 {
		t.Fatalf("the administrator's certificate lists %v", got)
	}
	if out, err := d.remote(red, "", "get", "topology"); err == nil || !strings.Contains(out, "administrator") {
		t.Fatalf("red reading the topology: %v\n%s", err, out)
	}
	// a token that contradicts the certificate
	if out, err := d.remote(red, adminToken, "cube", "list"); err == nil || !strings.Contains(out, "different identities") {
		t.Fatalf("red's certificate with the admin token: %v\n%s", err, out)
	}
	// the client verifies the server: the system's roots do not know this CA
	if out, err := d.remote(tlsauth.ClientFiles{}, adminToken, "cube", "list"); err == nil || !strings.Contains(out, "certificate") {
		t.Fatalf("a server of an unknown CA accepted: %v\n%s", err, out)
	}
	// a certificate of another CA names nobody
	other := tlstest.NewCA(t, "other")
	forged := other.Client("forged", tlstest.Subject{URIs: []string{"edgenf://admin"}})
	if out, err := d.remote(tlsauth.ClientFiles{CA: d.ca.File, Cert: forged.Cert, Key: forged.Key}, "", "cube", "list"); err == nil || !strings.Contains(out, "bearer token") {
		t.Fatalf("a certificate of another CA: %v\n%s", err, out)
	}
	// clear text to the TLS port
	if out, err := exec.Command(filepath.Join(binDir, "edgenf"), "--server", strings.Replace(d.url, "https", "http", 1), "--token", adminToken, "cube", "list").CombinedOutput(); err == nil {
		t.Fatalf("clear-text HTTP to the TLS listener answered:\n%s", out)
	}
	if got := d.cli("cube", "list", "-o", "json"); len(cubeNames(t, got)) != 2 {
		t.Fatalf("the unix socket lists %s", got)
	}
}

// scrape fetches /metrics over TLS.
func (d *tlsDaemon) scrape(f tlsauth.ClientFiles, token string) (int, string) {
	d.t.Helper()
	cfg, err := tlsauth.ClientConfig(f)
	if err != nil {
		d.t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
	req, _ := http.NewRequest("GET", d.url+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsOverTCPAreAuthenticatedAndScoped: /metrics answers 401
// without credentials; a tenant's scrape names only its own cubes; the
// administrator's has every cube and the host-wide series.
func TestMetricsOverTCPAreAuthenticatedAndScoped(t *testing.T) {
	testenv.E2E(t)
	d := startTLSDaemon(t)
	for _, c := range [][]string{{"r1", "red"}, {"b1", "blue"}} {
		d.cli("cube", "add", c[0], "portfwd", "--tenant", c[1])
		d.cli("port", "add", c[0], "p0")
	}
	caOnly := tlsauth.ClientFiles{CA: d.ca.File}
	if code, body := d.scrape(caOnly, ""); code != 401 || strings.Contains(body, "r1") {
		t.Fatalf("no credentials: HTTP %d\n%s", code, body)
	}
	code, body := d.scrape(caOnly, redToken)
	if code != 200 || !strings.Contains(body, `cube="r1"`) || strings.Contains(body, "b1") || strings.Contains(body, "copy_machine") {
		t.Fatalf("red's token: HTTP %d\n%s", code, body)
	}
	code, body = d.scrape(d.identity("edgenf://tenant/blue"), "")
	if code != 200 || !strings.Contains(body, `cube="b1"`) || strings.Contains(body, "r1") {
		t.Fatalf("blue's certificate: HTTP %d\n%s", code, body)
	}
	code, body = d.scrape(d.identity("edgenf://admin"), "")
	if code != 200 || !strings.Contains(body, `cube="r1"`) || !strings.Contains(body, `cube="b1"`) || !strings.Contains(body, "edgenf_copy_machine_stale_total") {
		t.Fatalf("the administrator: HTTP %d\n%s", code, body)
	}
}

// TestServerTimeoutsSparePollsAndTop: with read, write and idle timeouts
// of a few seconds, a client that never finishes its request is cut off,
// while a long poll waiting longer than every timeout, and `edgenf top`
// polling slower than the idle timeout, work.
func TestServerTimeoutsSparePollsAndTop(t *testing.T) {
	testenv.E2E(t)
	d := startTLSDaemon(t, "-http-read-timeout", "2s", "-http-write-timeout", "2s", "-http-idle-timeout", "1s")
	d.cli("cube", "add", "sw", "p4", "--program", "../../examples/p4/l2learn.p4")
	admin := d.identity("edgenf://admin")

	c, err := client.Open(client.Options{Server: d.url, TLS: admin})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := c.Do("POST", "/v1/cubes/sw/actions/poll", map[string]int{"timeout_ms": 5000}, &res); err != nil || res.Events == nil {
		t.Fatalf("a 5 s long poll through 2 s timeouts: %v %+v", err, res)
	}

	out := d.mustRemote(admin, "", "top", "sw", "--interval", "2s", "--count", "2")
	if !strings.Contains(out, "edgenf top") {
		t.Fatalf("edgenf top:\n%s", out)
	}

	// a request whose headers never end is cut off by the server
	cfg, _ := tlsauth.ClientConfig(admin)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(d.url, "https://"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /v1/health HTTP/1.1\r\nHost: edgenfd\r\n")
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
		t.Fatalf("the server kept an unfinished request open: %v", err)
	}
}

// TestConnectionCap: with -max-conns 2, two held connections make a third
// client wait until one is closed.
func TestConnectionCap(t *testing.T) {
	testenv.E2E(t)
	d := startTLSDaemon(t, "-max-conns", "2")
	addr := strings.TrimPrefix(d.url, "https://")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr) // accepted, then silent (no handshake)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer c.Close()
	}
	time.Sleep(200 * time.Millisecond) // the server has accepted both
	done := make(chan error, 1)
	go func() {
		_, err := d.remote(d.identity("edgenf://admin"), "", "cube", "list")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a third connection was served while two were held (%v)", err)
	case <-time.After(1500 * time.Millisecond):
	}
	for _, c := range held {
		c.Close()
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("served after the held connections closed: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("never served after the held connections closed")
	}
}

// p4rtTLS dials the daemon's P4Runtime TCP server over TLS.
func p4rtTLS(t *testing.T, addr string, f tlsauth.ClientFiles) *grpc.ClientConn {
	t.Helper()
	cfg, err := tlsauth.ClientConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)), grpc.WithDefaultCallOptions(grpc.ForceCodec(p4rt.Codec)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func p4rtGet(ctx context.Context, conn *grpc.ClientConn, device uint64) error {
	return conn.Invoke(ctx, "/p4.v1.P4Runtime/GetForwardingPipelineConfig",
		&p4rt.GetPipelineRequest{DeviceID: device, ResponseType: p4rt.ResponseCookieOnly}, &p4rt.GetPipelineResponse{})
}

func wantStatus(t *testing.T, what string, err error, c codes.Code) {
	t.Helper()
	if status.Code(err) != c {
		t.Fatalf("%s: %v, want %s", what, err, c)
	}
}

// TestP4RuntimeSocketTLSAndTenantDevices: P4Runtime is on a unix socket only
// root can connect to, and on TCP with TLS only; over TCP a tenant's
// certificate or token reaches the devices bound to it and nothing else,
// and the pipeline it loads makes a cube of its tenant.
func TestP4RuntimeSocketTLSAndTenantDevices(t *testing.T) {
	testenv.E2E(t)
	sockDir := t.TempDir()
	os.Chmod(sockDir, 0o755) // only the socket's own mode keeps others out
	psock := filepath.Join(sockDir, "p4rt.sock")
	paddr := freeAddr(t)
	d := startTLSDaemon(t, "-p4rt-devices", "sw1=1,red1=2@red,blue1=3@blue", "-p4rt-socket", psock, "-p4rt-listen", paddr)
	c := ctx(t, 2*time.Minute)

	st, err := os.Stat(psock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("P4Runtime socket mode %v", st.Mode().Perm())
	}
	connect := []string{"/usr/bin/python3", "-c", "import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])", psock}
	if out, err := exec.Command(connect[0], connect[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("root cannot connect to the P4Runtime socket: %v\n%s", err, out)
	}
	nobody := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, connect...)
	if out, err := exec.Command("setpriv", nobody...).CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Fatalf("an unprivileged user connected to the P4Runtime socket: %v\n%s", err, out)
	}

	// clear text to the TCP port fails
	plain, err := grpc.NewClient(paddr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(p4rt.Codec)))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	short, cancel := context.WithTimeout(c, 10*time.Second)
	defer cancel()
	if err := p4rtGet(short, plain, 1); err == nil {
		t.Fatal("P4Runtime answered in clear text over TCP")
	}

	red := p4rtTLS(t, paddr, d.identity("edgenf://tenant/red"))
	wantStatus(t, "red, blue's device", p4rtGet(c, red, 3), codes.NotFound)
	wantStatus(t, "red, the administrator's device", p4rtGet(c, red, 1), codes.NotFound)
	wantStatus(t, "no credentials", p4rtGet(c, p4rtTLS(t, paddr, tlsauth.ClientFiles{CA: d.ca.File}), 2), codes.Unauthenticated)
	// red loads a pipeline on its device: the cube is red's
	stream, err := red.NewStream(c, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/p4.v1.P4Runtime/StreamChannel")
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&p4rt.StreamRequest{Arbitration: &p4rt.Arbitration{DeviceID: 2, ElectionID: &p4rt.Uint128{Low: 1}}}); err != nil {
		t.Fatal(err)
	}
	var m p4rt.StreamResponse
	if err := stream.RecvMsg(&m); err != nil || m.Arbitration == nil {
		t.Fatalf("arbitration: %v", err)
	}
	src, err := os.ReadFile("../../examples/p4/l2switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	if err := red.Invoke(c, "/p4.v1.P4Runtime/SetForwardingPipelineConfig", &p4rt.SetPipelineRequest{DeviceID: 2, ElectionID: &p4rt.Uint128{Low: 1},
		Action: p4rt.ActionVerifyAndCommit, Config: &p4rt.PipelineConfig{DeviceConfig: src}}, &p4rt.SetPipelineResponse{}); err != nil {
		t.Fatal(err)
	}
	if got := cubeNames(t, d.cli("cube", "list", "-o", "json")); len(got) != 1 || got[0] != "red1@red" {
		t.Fatalf("cubes after red's pipeline: %v", got)
	}
	// red's token (in the call's metadata) reaches it too; blue's does not
	caOnly := p4rtTLS(t, paddr, tlsauth.ClientFiles{CA: d.ca.File})
	if err := p4rtGet(metadata.AppendToOutgoingContext(c, "authorization", "Bearer "+redToken), caOnly, 2); err != nil {
		t.Fatalf("red's token: %v", err)
	}
	wantStatus(t, "blue's token, red's device", p4rtGet(metadata.AppendToOutgoingContext(c, "authorization", "Bearer "+blueToken), caOnly, 2), codes.NotFound)
	// the unix socket is the administrator's: every device
	wantStatus(t, "the socket, blue's device", p4rtGet(c, p4rtClient(t, psock), 3), codes.FailedPrecondition)
}
