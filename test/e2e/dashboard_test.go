package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// browser starts Debian's chromium headless with a fresh profile; the
// returned context drives one tab until the test ends. An exception in the
// page fails the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	const exe = "/usr/bin/chromium"
	if _, err := os.Stat(exe); err != nil {
		t.Fatalf("chromium is not installed (scripts/setup.sh installs it): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1500, 1000),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	// the page's errors and console, in the test's log
	var mu sync.Mutex
	var exceptions []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("exception in the page: %s", e)
		}
	})
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			mu.Lock()
			exceptions = append(exceptions, ev.ExceptionDetails.Error())
			mu.Unlock()
		case *runtime.EventConsoleAPICalled:
			for _, a := range ev.Args {
				t.Logf("console.%s: %s", ev.Type, a.Value)
			}
		}
	})
	if err := chromedp.Run(ctx); err != nil { // starts the browser
		t.Fatal(err)
	}
	return ctx
}

// js evaluates an expression in the page (awaiting a promise).
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	var v T
	await := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
	if err := chromedp.Run(ctx, chromedp.Evaluate(expr, &v, await)); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// until polls a page expression until it is true.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if js[bool](t, ctx, "!!("+expr+")") {
			return
		}
	}
	t.Fatalf("the page never showed %s (%s)", what, expr)
}

// signIn types a token into the sign-in form.
func signIn(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	if err := chromedp.Run(ctx,
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SetValue("#token", token, chromedp.ByQuery),
		chromedp.Click(`#login button[type="submit"]`, chromedp.ByQuery),
	); err != nil {
		t.Fatal(err)
	}
}

// udpStream sends a datagram from a to dst:port every millisecond until ctx
// ends (at most 20 s), to a receiver on b.
func udpStream(t *testing.T, ctx context.Context, a, b *netlab.Host, dst string, port int) {
	var rx, tx *net.UDPConn
	if err := b.Do(func() (err error) { rx, err = net.ListenUDP("udp", &net.UDPAddr{Port: port}); return }); err != nil {
		t.Fatal(err)
	}
	if err := a.Do(func() (err error) {
		tx, err = net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(dst), Port: port})
		return
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := rx.ReadFromUDP(buf); err != nil {
				return
			}
		}
	}()
	go func() {
		defer rx.Close()
		defer tx.Close()
		end := time.After(20 * time.Second)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		payload := make([]byte, 200)
		for {
			select {
			case <-ctx.Done():
				return
			case <-end:
				return
			case <-tick.C:
				tx.Write(payload)
			}
		}
	}()
}

// TestDashboard drives the dashboard in a real browser: without a token it
// shows nothing but the sign-in form (and the API refuses the page's
// requests); with the administrator's token every cube, port, interface,
// peer link and attached cube is drawn, the counters move while traffic
// runs, a cube's tables, views and a P4 cube's tables show; a tenant's
// token shows that tenant's cubes only.
func TestDashboard(t *testing.T) {
	testenv.E2E(t)
	addr := freeAddr(t)
	d := startDaemon(t, "-listen", addr, "-tokens", tokenFile(t))
	url := "http://" + addr + "/ui/"
	_, a, b, ra, rb := twoHosts(t)
	// red: ra ↔ c1 ↔ c2 ↔ rb, a monitor on c1:p0; blue: b1 with a spare
	// port; the administrator: a P4 switch with one entry
	for _, c := range []string{"c1", "c2"} {
		d.cli("cube", "add", c, "portfwd", "--tenant", "red")
	}
	d.cli("port", "add", "c1", "p0", "--peer", ra)
	d.cli("port", "add", "c1", "p1")
	d.cli("port", "add", "c2", "p0", "--peer", "c1:p1")
	d.cli("port", "add", "c2", "p1", "--peer", rb)
	for _, c := range []string{"c1", "c2"} {
		d.cli("table", "add", c, "rules", "in_port=p0", "out_port=p1")
		d.cli("table", "add", c, "rules", "in_port=p1", "out_port=p0")
	}
	d.cli("cube", "add", "m1", "monitor", "--tenant", "red")
	d.cli("attach", "m1", "c1:p0")
	d.cli("cube", "add", "b1", "portfwd", "--tenant", "blue")
	d.cli("port", "add", "b1", "spare")
	prog, _ := filepath.Abs("../../examples/p4/portfwd.p4")
	d.cli("cube", "add", "sw", "p4", "--program", prog)
	d.cli("port", "add", "sw", "p0", "--index", "0")
	d.cli("port", "add", "sw", "p1", "--index", "1")
	d.cli("p4", "table-add", "sw", "fwd", "forward", "0", "=>", "1")

	ctx := browser(t)
	if err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	// no token: the form, nothing else; the API refuses the page
	until(t, ctx, "the sign-in form", `!!document.querySelector('#token')`)
	if js[bool](t, ctx, `!!document.querySelector('svg.topology, [data-cube]')`) {
		t.Fatal("the topology is drawn before signing in")
	}
	if code := js[float64](t, ctx, `fetch('/v1/graph').then(r => r.status)`); code != 401 {
		t.Fatalf("the page's API request without a token: HTTP %v, want 401", code)
	}
	signIn(t, ctx, "not-a-token-0123456789")
	until(t, ctx, "the refusal", `(document.querySelector('#login-message')||{}).textContent?.includes('refused')`)

	// the administrator sees everything
	signIn(t, ctx, adminToken)
	until(t, ctx, "the topology", `!!document.querySelector('svg.topology [data-cube="c1"]')`)
	if who := js[string](t, ctx, `document.querySelector('#identity').textContent`); who != "administrator" {
		t.Errorf("identity shown: %q", who)
	}
	drawn := func(sel string) bool { return js[bool](t, ctx, fmt.Sprintf(`!!document.querySelector(%q)`, sel)) }
	for _, sel := range []string{
		`[data-cube="c1"]`, `[data-cube="c2"]`, `[data-cube="b1"]`, `[data-cube="sw"]`,
		`[data-port="c1:p0"]`, `[data-port="c1:p1"]`, `[data-port="c2:p0"]`, `[data-port="c2:p1"]`, `[data-port="b1:spare"]`,
		`[data-port="sw:p0"]`, `[data-port="sw:p1"]`,
		`[data-iface="` + ra + `"]`, `[data-iface="` + rb + `"]`,
		`[data-link="c1:p0 ` + ra + `"]`, `[data-link="c2:p1 ` + rb + `"]`,
		`[data-attached="m1"][data-point="c1:p0"]`,
	} {
		if !drawn("svg.topology " + sel) {
			t.Errorf("the graph does not draw %s", sel)
		}
	}
	if !drawn(`svg.topology [data-link="c1:p1 c2:p0"]`) && !drawn(`svg.topology [data-link="c2:p0 c1:p1"]`) {
		t.Error("the graph does not draw the link c1:p1 ↔ c2:p0")
	}
	if n := js[float64](t, ctx, `document.querySelectorAll('svg.topology .link').length`); n != 3 {
		t.Errorf("%v links drawn, want 3", n)
	}

	// counters move while traffic runs, in the port table and on the graph
	rx := func() uint64 {
		var v uint64
		fmt.Sscan(strings.ReplaceAll(js[string](t, ctx, `(document.querySelector('#ports tr[data-port="c1:p0"] .rx-packets')||{}).textContent||'0'`), ",", ""), &v)
		return v
	}
	traffic, stop := context.WithCancel(context.Background())
	defer stop()
	udpStream(t, traffic, a, b, "198.18.0.2", 7100)
	until(t, ctx, "c1:p0 receiving", `(document.querySelector('#ports tr[data-port="c1:p0"] .rx-pps')||{}).textContent?.endsWith('pps') && !document.querySelector('#ports tr[data-port="c1:p0"] .rx-pps').textContent.startsWith('0 ')`)
	first := rx()
	var second uint64
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end) && second <= first; time.Sleep(300 * time.Millisecond) {
		second = rx()
	}
	if second <= first || first == 0 {
		t.Errorf("c1:p0's received packets did not move while traffic ran: %d then %d", first, second)
	}
	until(t, ctx, "a busy link", `!!document.querySelector('svg.topology .link.busy')`)

	// a cube in detail: its table; the P4 cube's table by its P4Info
	if err := chromedp.Run(ctx, chromedp.Click(`svg.topology [data-cube="c1"] .body`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "c1's rules", `[...document.querySelectorAll('[data-detail="c1"] [data-section="table:rules"] td')].some(td => td.textContent === 'p1')`)
	if err := chromedp.Run(ctx, chromedp.Click(`svg.topology [data-cube="sw"] .body`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "sw's P4 table with its entry", `[...document.querySelectorAll('[data-detail="sw"] [data-p4table] td')].some(td => td.textContent.startsWith('MyIngress.forward'))`)
	if err := chromedp.Run(ctx, chromedp.Click(`svg.topology [data-cube="c1"] .body`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "c1 in detail", `!!document.querySelector('[data-detail="c1"] [data-section="table:rules"] td')`)
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	if p := os.Getenv("EDGENF_DASHBOARD_SCREENSHOT"); p != "" {
		shot = p // docs/img/dashboard.png is made this way
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
	stop()

	// red sees its own cubes only
	if err := chromedp.Run(ctx, chromedp.Click("#signout", chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	if tok := js[string](t, ctx, `sessionStorage.getItem('edgenf-token') || ''`); tok != "" {
		t.Errorf("the token is still stored after signing out")
	}
	signIn(t, ctx, redToken)
	until(t, ctx, "red's topology", `!!document.querySelector('svg.topology [data-cube="c2"]')`)
	for _, c := range []string{"b1", "sw"} {
		if drawn(`[data-cube="`+c+`"]`) || drawn(`[data-port^="`+c+`:"]`) {
			t.Errorf("tenant red sees %s", c)
		}
	}
	if !drawn(`svg.topology [data-attached="m1"]`) {
		t.Error("tenant red does not see its monitor m1")
	}
	// a reload keeps the session (the tab's storage); a new tab has none
	if err := chromedp.Run(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "red's topology after a reload", `!!document.querySelector('svg.topology [data-cube="c1"]')`)
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Run(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	until(t, tab, "the sign-in form in a new tab", `!!document.querySelector('#token')`)
}

// TestDashboardShowsUPFSessions: a upf cube's sessions (established by an
// SMF over PFCP) show in the dashboard, as every view of every NF type
// does, with no code of the dashboard's about the UPF.
func TestDashboardShowsUPFSessions(t *testing.T) {
	testenv.E2E(t)
	addr := freeAddr(t)
	l := newUPFLab(t, "-listen", addr, "-tokens", tokenFile(t))
	_, sess, ue := l.attach(t, "ue", 0x5eed, 0x9000)
	ctx := browser(t)
	if err := chromedp.Run(ctx, chromedp.Navigate("http://"+addr+"/ui/")); err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, adminToken)
	until(t, ctx, "the upf", `!!document.querySelector('svg.topology [data-cube="upf1"]')`)
	if err := chromedp.Run(ctx, chromedp.Click(`svg.topology [data-cube="upf1"] .body`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	cells := `[...document.querySelectorAll('[data-detail="upf1"] [data-section="view:sessions"] td')].map(td => td.textContent)`
	until(t, ctx, "the session in the sessions view", fmt.Sprintf(`%s.some(c => c.includes(%q))`, cells, ue.String()))
	seid := fmt.Sprint(sess.UPSEID)
	if !js[bool](t, ctx, fmt.Sprintf(`%s.some(c => c === %q)`, cells, seid)) {
		t.Errorf("the sessions view does not show SEID %s: %v", seid, js[[]string](t, ctx, cells))
	}
}
