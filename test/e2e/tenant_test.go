package e2e

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// The tenant boundary (issue 12): a daemon on TCP with an administrator
// token and tenant tokens red and blue, each tenant with two hosts behind a
// portfwd cube of its own. Every attack red makes is refused, changes
// nothing, and blue's traffic keeps flowing through it.

// (The tokens are transport_test.go's.)

type tenantLab struct {
	t                  *testing.T
	d                  *daemon
	url                string
	admin, red, blue   *client.Client
	redA, redB         *netlab.Host
	blueA, blueB       *netlab.Host
	rRa, rRb, bRa, bRb string // root ends of the hosts' veths
	udpPort            int
}

// startTenants starts the daemon and builds red's chain (r1) and blue's
// (b1, with a spare port p2), plus an administrator's cube adm.
func startTenants(t *testing.T) *tenantLab {
	t.Helper()
	tl := &tenantLab{t: t, udpPort: 6100}
	_, tl.redA, tl.redB, tl.rRa, tl.rRb = twoHosts(t)
	_, tl.blueA, tl.blueB, tl.bRa, tl.bRb = twoHosts(t)
	tokens := map[string]any{
		"tokens": []map[string]string{{"token": adminToken}, {"token": redToken, "tenant": "red"}, {"token": blueToken, "tenant": "blue"}},
		"tenants": []map[string]any{
			{"name": "red", "interfaces": []string{tl.rRa, tl.rRb}},
			// blue's compiles are stopped after 5 s, and its cubes may
			// preallocate 200 MiB of maps
			{"name": "blue", "interfaces": []string{tl.bRa, tl.bRb}, "quota": map[string]int64{"p4_compile_seconds": 5, "kernel_memory_bytes": 200 << 20}},
		},
	}
	b, _ := json.Marshal(tokens)
	tokFile := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t) // p4rt_test.go
	tl.d = startDaemon(t, "-listen", addr, "-tokens", tokFile)
	tl.url = "http://" + addr
	tl.admin, tl.red, tl.blue = client.New("", tl.url, adminToken), client.New("", tl.url, redToken), client.New("", tl.url, blueToken)
	chain := func(cl *client.Client, name, in, out string, spare bool) {
		ports := []map[string]any{{"name": "p0", "peer": in}, {"name": "p1", "peer": out}}
		if spare {
			ports = append(ports, map[string]any{"name": "p2"})
		}
		if err := cl.Do("POST", "/v1/cubes", map[string]any{"name": name, "type": "portfwd", "ports": ports}, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rules := []map[string]string{{"in_port": "p0", "out_port": "p1"}, {"in_port": "p1", "out_port": "p0"}}
		if err := cl.Do("POST", "/v1/cubes/"+name+"/tables/rules", rules, nil); err != nil {
			t.Fatalf("%s rules: %v", name, err)
		}
	}
	chain(tl.blue, "b1", tl.bRa, tl.bRb, true)
	chain(tl.red, "r1", tl.rRa, tl.rRb, true)
	if err := tl.admin.Do("POST", "/v1/cubes", map[string]any{"name": "adm", "type": "portfwd", "ports": []map[string]any{{"name": "p0"}}}, nil); err != nil {
		t.Fatal(err)
	}
	c := ctx(t, 30*time.Second)
	if err := tl.blueA.Ping(c, "198.18.0.2", 2); err != nil {
		t.Fatalf("blue's ping: %v", err)
	}
	if err := tl.redA.Ping(c, "198.18.0.2", 2); err != nil {
		t.Fatalf("red's ping: %v", err)
	}
	return tl
}

func (tl *tenantLab) topology() string {
	tl.t.Helper()
	var raw json.RawMessage
	if err := tl.admin.Do("GET", "/v1/topology", nil, &raw); err != nil {
		tl.t.Fatal(err)
	}
	return string(raw)
}

// blueDelivers sends n datagrams through blue's chain and reports how many
// arrived intact.
func (tl *tenantLab) blueDelivers(n int) int {
	tl.udpPort++
	return sendUDP(tl.t, tl.blueA, tl.blueB, "198.18.0.2", tl.udpPort, n, 200)
}

// attack is one request red makes and the refusal it must get.
type attack struct {
	what         string
	method, path string
	body         any
	code         int
	want         string
}

// refusedAll runs the attacks while blue's traffic flows, and checks each is
// refused as wanted without naming blue, that the state is unchanged and
// that every one of blue's datagrams arrived.
func (tl *tenantLab) refusedAll(as []attack) {
	t := tl.t
	t.Helper()
	before := tl.topology()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, a := range as {
			err := tl.red.Do(a.method, a.path, a.body, nil)
			var ae *client.Error
			if !errors.As(err, &ae) || ae.Code != a.code || !strings.Contains(ae.Error(), a.want) {
				t.Errorf("%s: %v, want HTTP %d %q", a.what, err, a.code, a.want)
				continue
			}
			// nothing of blue's that red did not name itself
			asked, _ := json.Marshal(a.body)
			for _, secret := range []string{"b1:p0", "b1:p1", "b1:p2", tl.bRa, tl.bRb, blueToken} {
				if strings.Contains(ae.Error(), secret) && !strings.Contains(a.path+string(asked), secret) {
					t.Errorf("%s: the refusal tells about blue's %s: %v", a.what, secret, ae)
				}
			}
		}
	}()
	const n = 3000
	got := tl.blueDelivers(n)
	wg.Wait()
	if got != n {
		t.Errorf("blue's traffic during the attacks: %d of %d datagrams arrived", got, n)
	}
	if after := tl.topology(); after != before {
		t.Fatalf("the attacks changed the state:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// Attaching, peering and mirroring outside what red owns: a drop-all
// firewall and a monitor red tries to put on blue's port and interface, on
// the administrator's port and on an interface nobody owns; peerings with
// blue's and the administrator's ports and with interfaces red was not
// given; a ddos cube mirroring to blue's interface.
func TestTenantCannotTouchAnotherTenantsTraffic(t *testing.T) {
	testenv.E2E(t)
	tl := startTenants(t)
	for _, c := range []map[string]any{
		{"name": "rfw", "type": "firewall", "config": map[string]string{"ingress_policy": "drop", "egress_policy": "drop"}},
		{"name": "rmon", "type": "monitor"},
	} {
		if err := tl.red.Do("POST", "/v1/cubes", c, nil); err != nil {
			t.Fatal(err)
		}
	}
	tl.refusedAll([]attack{
		{"drop-all firewall on blue's port", "POST", "/v1/attachments", map[string]string{"cube": "rfw", "point": "b1:p0"}, 404, `no cube named "b1"`},
		{"drop-all firewall on blue's interface", "POST", "/v1/attachments", map[string]string{"cube": "rfw", "point": tl.bRa}, 403, "is not assigned to tenant red"},
		{"monitor on blue's port", "POST", "/v1/attachments", map[string]string{"cube": "rmon", "point": "b1:p1", "position": "first"}, 404, `no cube named "b1"`},
		{"monitor on the administrator's port", "POST", "/v1/attachments", map[string]string{"cube": "rmon", "point": "adm:p0"}, 404, `no cube named "adm"`},
		{"monitor on an interface nobody owns", "POST", "/v1/attachments", map[string]string{"cube": "rmon", "point": "lo"}, 403, `interface "lo" is not assigned to tenant red`},
		{"peer with blue's spare port", "PATCH", "/v1/cubes/r1/ports/p2", map[string]string{"peer": "b1:p2"}, 404, `no cube named "b1"`},
		{"peer with the administrator's port", "PATCH", "/v1/cubes/r1/ports/p2", map[string]string{"peer": "adm:p0"}, 404, `no cube named "adm"`},
		{"peer with blue's interface", "PATCH", "/v1/cubes/r1/ports/p2", map[string]string{"peer": tl.bRb}, 403, "is not assigned to tenant red"},
		{"peer with a host interface", "POST", "/v1/cubes/r1/ports", map[string]string{"name": "p3", "peer": "lo"}, 403, "not assigned"},
		{"mirror to blue's interface", "POST", "/v1/cubes", map[string]any{"name": "rdd", "type": "ddos",
			"config": map[string]any{"scan": map[string]any{"distinct_ports": 10}, "mirror_interface": tl.bRa}}, 403, "is not assigned to tenant red"},
		{"inject into blue's port", "POST", "/v1/cubes/b1/ports/p0/inject", map[string]string{"frame": strings.Repeat("ff", 60)}, 404, `no cube named "b1"`},
		{"detach blue's cube", "DELETE", "/v1/attachments/b1", nil, 404, `no cube named "b1"`},
		{"read blue's counters", "GET", "/v1/cubes/b1/stats", nil, 404, `no cube named "b1"`},
		{"read blue's tenant record", "GET", "/v1/tenants/blue", nil, 404, ""},
		{"read the whole topology", "GET", "/v1/topology", nil, 403, "administrator"},
	})
	// Blue sees nothing of red's, red nothing of blue's.
	var cubes []struct{ Name string }
	if err := tl.blue.Do("GET", "/v1/cubes", nil, &cubes); err != nil || len(cubes) != 1 || cubes[0].Name != "b1" {
		t.Fatalf("blue sees %+v (%v)", cubes, err)
	}
	// The firewall is real: on red's own port it drops red's traffic, and
	// blue's still flows.
	if err := tl.red.Do("POST", "/v1/attachments", map[string]string{"cube": "rfw", "point": "r1:p0"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := sendUDP(t, tl.redA, tl.redB, "198.18.0.2", 6099, 200, 200); got != 0 {
		t.Errorf("red's drop-all firewall on its own port let %d of 200 through", got)
	}
	if got := tl.blueDelivers(1000); got != 1000 {
		t.Errorf("blue's traffic with red's firewall on red's port: %d of 1000", got)
	}
}

// P4 source comes inline: no path is read on a client's behalf, clients
// name no include directories, a tenant swaps in no object of its own, and
// a compile over red's time limit is stopped while blue is served.
func TestTenantP4AndSwapStayInsideTheDaemon(t *testing.T) {
	testenv.E2E(t)
	tl := startTenants(t)
	passwd, _ := os.ReadFile("/etc/passwd")
	firstLine, _, _ := strings.Cut(string(passwd), "\n")
	tl.refusedAll([]attack{
		{"program as a path", "POST", "/v1/cubes", map[string]any{"name": "sw", "type": "p4", "config": map[string]string{"program": "/etc/passwd"}}, 400, "source: required"},
		{"program /dev/zero", "POST", "/v1/cubes", map[string]any{"name": "sw", "type": "p4", "config": map[string]string{"program": "/dev/zero"}}, 400, "source: required"},
		{"include_dirs", "POST", "/v1/cubes", map[string]any{"name": "sw", "type": "p4", "config": map[string]any{
			"program": "x.p4", "source": "#include \"passwd\"\n", "include_dirs": []string{"/etc"}}}, 400, "include_dirs: unknown field"},
		{"#include of an absolute path", "POST", "/v1/cubes", map[string]any{"name": "sw", "type": "p4", "config": map[string]any{
			"program": "x.p4", "source": "#include \"/etc/passwd\"\n"}}, 422, "config"},
		{"swap in an object", "POST", "/v1/cubes/r1/swap", map[string]string{"object": base64.StdEncoding.EncodeToString([]byte("\x7fELF not really"))}, 403, "only an administrator"},
	})
	// No refusal echoes a file of the host.
	for _, src := range []string{"#include \"/etc/passwd\"\n", "#include </etc/passwd>\n"} {
		err := tl.red.Do("POST", "/v1/cubes", map[string]any{"name": "sw", "type": "p4", "config": map[string]any{"program": "x.p4", "source": src}}, nil)
		if err == nil || (firstLine != "" && strings.Contains(err.Error(), firstLine)) {
			t.Errorf("%q: %v", src, err)
		}
	}
	// The CLI reads the program on the client: the daemon gets its text and
	// its file name only.
	var ae *client.Error
	out, err := tl.cliAs(redToken, "cube", "add", "sw", "p4", "--program", "../../examples/p4/l2switch.p4")
	if err != nil {
		t.Fatalf("red's p4 cube: %v\n%s", err, out)
	}
	var sw struct {
		Config struct{ Program, Source string }
	}
	if err := tl.red.Do("GET", "/v1/cubes/sw", nil, &sw); err != nil || sw.Config.Program != "l2switch.p4" || !strings.Contains(sw.Config.Source, "V1Switch") {
		t.Fatalf("red's p4 cube settings: %v %.80q", err, sw.Config)
	}
	if err := tl.red.Do("POST", "/v1/cubes/r1/swap", map[string]any{}, nil); err != nil {
		t.Fatalf("swap to the NF type's own program: %v", err)
	}

	// Text of red's own in the program reaches the generated C only as
	// identifiers and literals: a table named to close a comment and add C
	// that clang would refuse (a negative array size) compiles, and is a
	// table of that exact name; a raw CR that would start an #include is
	// refused at its position, echoing no file of the host.
	l2, err := os.ReadFile("../../examples/p4/l2switch.p4")
	if err != nil {
		t.Fatal(err)
	}
	const hostile = `x */ int injected[-1]; /*`
	src := strings.Replace(string(l2), `@name("mac_table")`, `@name("`+hostile+`")`, 1)
	if err := tl.red.Do("POST", "/v1/cubes", map[string]any{"name": "named", "type": "p4", "config": map[string]string{"program": "named.p4", "source": src}}, nil); err != nil {
		t.Fatalf("a table whose name closes a comment: %v", err)
	}
	var info struct {
		Tables []struct{ Preamble struct{ Name string } }
	}
	if err := tl.red.Do("GET", "/v1/nf/p4/named/views/p4info", nil, &info); err != nil || len(info.Tables) != 1 || info.Tables[0].Preamble.Name != "SwIngress."+hostile {
		t.Fatalf("the hostile table's P4Info: %+v (%v)", info, err)
	}
	entry := map[string]any{"table": "SwIngress." + hostile, "match": map[string]string{"vid": "0", "dst": "02:00:00:00:00:0b"},
		"action": "SwIngress.forward", "params": map[string]string{"port": "1"}}
	if err := tl.red.Do("POST", "/v1/cubes/named/tables/entries", entry, nil); err != nil {
		t.Fatalf("an entry of the hostile table: %v", err)
	}
	cr := strings.Replace(string(l2), `@name("mac_table")`, "@name(\"x\r#include </etc/passwd>\")", 1)
	err = tl.red.Do("POST", "/v1/cubes", map[string]any{"name": "cr", "type": "p4", "config": map[string]string{"program": "cr.p4", "source": cr}}, nil)
	if !errors.As(err, &ae) || ae.Code != 422 || !strings.Contains(ae.Error(), "cr.p4:") || !strings.Contains(ae.Error(), "absolute paths are refused") ||
		(firstLine != "" && strings.Contains(ae.Error(), firstLine)) {
		t.Fatalf("a raw CR before an #include in a name: %v", err)
	}

	// A compile longer than blue's limit (5 s, from the token file) is
	// stopped with a quota error; the engine is not held meanwhile: red's
	// requests and traffic go on.
	done := make(chan error, 1)
	go func() {
		done <- tl.blue.Do("POST", "/v1/cubes", map[string]any{"name": "bigp4", "type": "p4", "config": map[string]string{"program": "big.p4", "source": bigP4(400)}}, nil)
	}()
	time.Sleep(500 * time.Millisecond) // (a head start; nothing below depends on it)
	if err := tl.red.Do("POST", "/v1/cubes/r1/tables/rules", map[string]string{"in_port": "p2", "out_port": "p0"}, nil); err != nil {
		t.Fatalf("red's entry while blue's program compiles: %v", err)
	}
	if got := sendUDP(t, tl.redA, tl.redB, "198.18.0.2", 6098, 500, 200); got != 500 {
		t.Errorf("red's traffic during blue's compile: %d of 500", got)
	}
	err = <-done
	if !errors.As(err, &ae) || ae.Code != 403 || !strings.Contains(ae.Error(), "quota.p4_compile_seconds") || !strings.Contains(ae.Error(), "5s") {
		t.Fatalf("a compile over the time limit: %v", err)
	}
	var cubes []struct{ Name string }
	if err := tl.blue.Do("GET", "/v1/cubes", nil, &cubes); err != nil || len(cubes) != 1 {
		t.Fatalf("blue's cubes after the refused compile: %+v %v", cubes, err)
	}
}

// bigP4 is a valid program with n tables: clang takes minutes over it.
func bigP4(n int) string {
	var b strings.Builder
	b.WriteString(`#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { ethernet_t eth; }
struct meta_t { bit<16> x; }
parser P(packet_in pk, out headers h, inout meta_t m, inout standard_metadata_t sm) { state start { pk.extract(h.eth); transition accept; } }
control VC(inout headers h, inout meta_t m) { apply { } }
control CC(inout headers h, inout meta_t m) { apply { } }
control D(packet_out pk, in headers h) { apply { pk.emit(h.eth); } }
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
  action fwd(bit<9> p) { sm.egress_spec = p; }
  action set(bit<16> v) { m.x = m.x + v; }
`)
	for i := range n {
		fmt.Fprintf(&b, "  table t%d { key = { h.eth.dst: exact; m.x: ternary; } actions = { fwd; set; NoAction; } size = 64; }\n", i)
	}
	b.WriteString("  apply {\n")
	for i := range n {
		fmt.Fprintf(&b, "    t%d.apply();\n", i)
	}
	b.WriteString("  }\n}\nV1Switch(P(), VC(), I(), E(), CC(), D()) main;\n")
	return b.String()
}

// cliAs runs the CLI over TCP with a token.
func (tl *tenantLab) cliAs(token string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "edgenf"), append([]string{"--server", tl.url, "--token", token}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// rss is the daemon's resident memory in kB.
func (tl *tenantLab) rss() int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", tl.d.cmd.Process.Pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// Quotas: 2,000 cubes, 200k entries in one request, kernel memory, eight
// 60 MB bodies at once; `edgenf tenant get red` shows usage against quota.
func TestTenantQuotas(t *testing.T) {
	testenv.E2E(t)
	tl := startTenants(t)
	// red has the defaults: creating 2,000 cubes stops at 64.
	var quotaErr error
	made := 0
	for i := 0; i < 2000; i++ {
		if quotaErr = tl.red.Do("POST", "/v1/cubes", map[string]any{"name": fmt.Sprintf("m%d", i), "type": "monitor"}, nil); quotaErr != nil {
			break
		}
		made++
	}
	var ae *client.Error
	if !errors.As(quotaErr, &ae) || ae.Code != 403 || !strings.Contains(ae.Error(), "over quota cubes: limit 64, in use 64, this change needs 65") {
		t.Fatalf("cube %d: %v", made, quotaErr)
	}
	out, err := tl.cliAs(redToken, "tenant", "get", "red")
	if err != nil || !regexp.MustCompile(`(?m)^cubes\s+64\s+64 \(default\)\s*$`).MatchString(out) || !strings.Contains(out, tl.rRa) {
		t.Fatalf("edgenf tenant get red:\n%s (%v)", out, err)
	}
	if out, err := tl.cliAs(redToken, "tenant", "get", "blue"); err == nil {
		t.Fatalf("red reads blue's record:\n%s", out)
	}
	for i := range made {
		if err := tl.red.Do("DELETE", fmt.Sprintf("/v1/cubes/m%d", i), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// 200k ddos entries in one request: over the table entry quota,
	// refused whole.
	if err := tl.red.Do("POST", "/v1/cubes", map[string]any{"name": "rdd", "type": "ddos"}, nil); err != nil {
		t.Fatal(err)
	}
	before := tl.topology()
	var list strings.Builder
	list.WriteString("[")
	for i := range 200_000 {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"prefix":"198.%d.%d.%d/32"}`, 18+i>>16, i>>8&0xff, i&0xff)
	}
	list.WriteString("]")
	err = tl.red.Do("POST", "/v1/cubes/rdd/tables/blacklist_src", json.RawMessage(list.String()), nil)
	if !errors.As(err, &ae) || ae.Code != 403 || !strings.Contains(ae.Error(), "over quota table_entries: limit 100000, in use 2, this change needs 200002") {
		t.Fatalf("200k entries: %v", err)
	}
	// blue may preallocate 200 MiB (token file): one ddos cube (143 MiB),
	// not two.
	if err := tl.blue.Do("POST", "/v1/cubes", map[string]any{"name": "bdd1", "type": "ddos"}, nil); err != nil {
		t.Fatal(err)
	}
	err = tl.blue.Do("POST", "/v1/cubes", map[string]any{"name": "bdd2", "type": "ddos"}, nil)
	if !errors.As(err, &ae) || ae.Code != 403 || !strings.Contains(ae.Error(), fmt.Sprintf("over quota kernel_memory_bytes: limit %d", 200<<20)) {
		t.Fatalf("a second ddos cube: %v", err)
	}
	if err := tl.blue.Do("DELETE", "/v1/cubes/bdd1", nil, nil); err != nil {
		t.Fatal(err)
	}
	// Eight concurrent 60 MB bodies: refused before they are read; the
	// daemon's memory does not grow with them.
	rss0 := tl.rss()
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", tl.url+"/v1/cubes/rdd/tables/blacklist_src", io.LimitReader(zeros{}, 60<<20))
			req.ContentLength = 60 << 20
			req.Header.Set("Authorization", "Bearer "+redToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- -1 // the daemon closed the connection while we sent: refused too
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 413 && c != -1 {
			t.Errorf("a 60 MB body: HTTP %d, want 413", c)
		}
	}
	if grown := tl.rss() - rss0; grown > 64<<10 {
		t.Errorf("the daemon's RSS grew by %d kB over eight 60 MB bodies", grown)
	}
	if after := tl.topology(); after != before {
		t.Fatalf("the refused requests changed the state")
	}
	if got := tl.blueDelivers(1000); got != 1000 {
		t.Errorf("blue's traffic: %d of 1000", got)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// The foot-guns of the API: each is a 400 that changes nothing.
func TestTenantAPIFootGuns(t *testing.T) {
	testenv.E2E(t)
	tl := startTenants(t)
	before := tl.topology()
	raw := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, tl.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	empty := `{"cubes": []}`
	for _, c := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/topology?dry_run=maybe", empty, "not a boolean"},
		{"PUT", "/v1/topology?dry_run=yes", empty, "not a boolean"},
		{"PUT", "/v1/topology?dry_run=on", empty, "not a boolean"},
		{"PUT", "/v1/topology?dryrun=", empty, `unknown query parameter \"dryrun\"`},
		{"PUT", "/v1/topology", `{}`, "a topology document lists its cubes"},
	} {
		if code, body := raw(c.method, c.path, c.body); code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, code, body)
		}
	}
	if after := tl.topology(); after != before {
		t.Fatalf("a refused topology changed the state:\n%s", after)
	}
	if got := tl.blueDelivers(1000); got != 1000 {
		t.Fatalf("blue's traffic after the refused topologies: %d of 1000", got)
	}
	tl.admin.Do("POST", "/v1/cubes", map[string]any{"name": "rt", "type": "router"}, nil)
	before = tl.topology()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"port", "add", "r1", "p9", "--index", "-1"}, "port index -1 is negative"},
		{[]string{"port", "add", "r1", "p9", "--mac", "ff:ff:ff:ff:ff:ff"}, "multicast or broadcast MAC"},
		{[]string{"port", "add", "r1", "p9", "--mac", "33:33:00:00:00:01"}, "multicast or broadcast MAC"},
		{[]string{"port", "add", "r1", "p9", "--mac", "00:00:00:00:00:00"}, "zero MAC"},
		{[]string{"port", "add", "rt", "p0", "--ip", "255.255.255.255/32"}, "the broadcast address is no port's address"},
		{[]string{"inject", "r1", "p0", strings.Repeat("ab", 3000)}, "3000 bytes is longer than port p0 carries"},
	} {
		out, err := tl.cliAs(adminToken, c.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, c.want) {
			t.Errorf("edgenf %s: %v\n%s\nwant exit 1 and %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
	if after := tl.topology(); after != before {
		t.Fatalf("a refused change changed the state:\n%s", after)
	}
	c := ctx(t, 10*time.Second)
	if err := tl.redA.Ping(c, "198.18.0.2", 2); err != nil {
		t.Fatalf("red's ping after the refused changes: %v", err)
	}
}
