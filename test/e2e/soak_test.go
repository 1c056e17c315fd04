package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
	"github.com/vishvananda/netlink"
)

// TestSoak is `make soak` (SOAK=10m by default; skipped unless EDGENF_SOAK
// holds a duration): several tenants, each with its own token and chain,
// churn the API at random for the whole duration while every chain carries
// continuous, bounded traffic, and an administrator keeps re-applying the
// whole topology with cubes deleted and monitors added in one change. What
// is checked all along:
//   - every 20 s, traffic paused: not one datagram lost or duplicated on any
//     chain (monitors and every other change made are delivery-neutral, so
//     any loss is a bug), and the counters add up: each chain cube's ports
//     and the interface stubs counted exactly the datagrams sent; no
//     monitor counted more than its chain carried;
//   - every minute, the topology brought back to the chains alone: the
//     daemon holds exactly as many pinned objects, BPF program, map and link
//     descriptors and interface attachments as at the first such point; its
//     goroutines and resident memory stay flat;
//   - no request ever gets a 5xx.
func TestSoak(t *testing.T) {
	testenv.E2E(t)
	env := os.Getenv("EDGENF_SOAK")
	if env == "" {
		t.Skip("a soak run: make soak (EDGENF_SOAK=duration)")
	}
	dur, err := time.ParseDuration(env)
	if err != nil {
		t.Fatalf("EDGENF_SOAK=%q: %v", env, err)
	}
	s := newSoak(t)
	s.run(dur)
}

// soakChain is one tenant's chain: host a → cubes → host b, with
// continuous UDP from a to b.
type soakChain struct {
	tenant string
	hook   string
	cubes  []string // forwarding cubes, in order
	points []string // cube ports monitors may be attached to
	a, b   *netlab.Host
	ra, rb string
	dst    string
	cli    *client.Client // the tenant's token over TCP

	mu     sync.Mutex // held while a datagram is sent; paused stops sending
	paused bool
	sent   uint64
	seen   map[uint32]int
	tx, rx *net.UDPConn
}

type soak struct {
	t      *testing.T
	d      *daemon
	admin  *client.Client
	chains []*soakChain
	base   cube.Document // the chains alone

	churn sync.RWMutex // write-locked for a baseline point: no change then
	stop  atomic.Bool
	ops   sync.Map // op name → *atomic.Uint64
	fails atomic.Int64

	ref     *leakPoint
	samples []*leakPoint
}

// leakPoint is what the daemon holds, measured with the topology at its
// baseline.
type leakPoint struct {
	at          time.Duration
	pins        int
	bpfFDs      map[string]int
	attached    int
	goroutines  int
	rss, heap   int
	checkpoints int
}

func newSoak(t *testing.T) *soak {
	lab := netlab.NewT(t)
	specs := []struct {
		tenant, hook string
		cubes        int
	}{{"red", "xdp", 1}, {"blue", "tc", 1}, {"green", "xdp", 2}}
	dir := t.TempDir()
	var toks []map[string]string
	s := &soak{t: t}
	for i, sp := range specs {
		c := &soakChain{tenant: sp.tenant, hook: sp.hook, seen: map[uint32]int{}}
		subnet := fmt.Sprintf("198.18.%d.", 20+i)
		c.a, c.ra = quietHost(t, lab, sp.tenant[:1]+"a", subnet+"1/24")
		c.b, c.rb = quietHost(t, lab, sp.tenant[:1]+"b", subnet+"2/24")
		c.dst = subnet + "2"
		ma, _ := c.a.MAC("eth0")
		mb, _ := c.b.MAC("eth0")
		must(t, c.a.SetNeigh("eth0", subnet+"2", mb.String()))
		must(t, c.b.SetNeigh("eth0", subnet+"1", ma.String()))
		for k := 0; k < sp.cubes; k++ {
			c.cubes = append(c.cubes, fmt.Sprintf("%s-pf%d", sp.tenant, k))
		}
		for _, cb := range c.cubes {
			c.points = append(c.points, cb+":p0", cb+":p1")
		}
		toks = append(toks, map[string]string{"token": "soak-token-of-" + sp.tenant, "tenant": sp.tenant})
		s.chains = append(s.chains, c)
	}
	toks = append(toks, map[string]string{"token": "soak-token-of-the-admin"})
	tokFile := filepath.Join(dir, "tokens.json")
	b, _ := json.Marshal(map[string]any{"tokens": toks})
	must(t, os.WriteFile(tokFile, b, 0o600))
	addr := freeAddr(t)
	s.d = startDaemon(t, "-listen", addr, "-tokens", tokFile)
	s.admin = client.New(s.d.socket, "", "")
	for _, c := range s.chains {
		c.cli = client.New("", "http://"+addr, "soak-token-of-"+c.tenant)
	}
	s.base = s.baseline()
	if err := s.admin.Do("PUT", "/v1/topology", s.base, nil); err != nil {
		t.Fatalf("baseline topology: %v", err)
	}
	return s
}

// baseline is the chains alone, owned by their tenants.
func (s *soak) baseline() cube.Document {
	var doc cube.Document
	rules := []json.RawMessage{
		json.RawMessage(`{"in_port":"p0","out_port":"p1"}`),
		json.RawMessage(`{"in_port":"p1","out_port":"p0"}`),
	}
	for _, c := range s.chains {
		for k, name := range c.cubes {
			in, out := c.ra, c.rb
			if k > 0 {
				in = c.cubes[k-1] + ":p1"
			}
			if k < len(c.cubes)-1 {
				out = "" // the next cube names this peering
			}
			doc.Cubes = append(doc.Cubes, cube.DocCube{Name: name, Type: "portfwd", Hook: c.hook, Tenant: c.tenant,
				Ports:  []cube.DocPort{{Name: "p0", Peer: in}, {Name: "p1", Peer: out}},
				Tables: map[string][]json.RawMessage{"rules": rules}})
		}
	}
	return doc
}

func (s *soak) count(op string) {
	v, _ := s.ops.LoadOrStore(op, new(atomic.Uint64))
	v.(*atomic.Uint64).Add(1)
}

// do sends one request; 4xx are outcomes of random operations, anything
// else is a failure.
func (s *soak) do(cl *client.Client, op, method, path string, body any, out any) bool {
	s.count(op)
	err := cl.Do(method, path, body, out)
	if err == nil {
		return true
	}
	var ae *client.Error
	if errors.As(err, &ae) && ae.Code >= 400 && ae.Code < 500 {
		s.count(op + " (4xx)")
		return false
	}
	s.failf("%s %s %s: %v", op, method, path, err)
	return false
}

func (s *soak) failf(format string, args ...any) {
	s.t.Helper()
	s.t.Errorf(format, args...)
	if s.fails.Add(1) > 20 {
		s.stop.Store(true)
	}
}

func (s *soak) run(dur time.Duration) {
	t := s.t
	for _, c := range s.chains {
		s.startTraffic(c)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range s.chains {
		wg.Add(1)
		go func() { defer wg.Done(); s.tenantChurn(c) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.adminChurn() }()

	checkpoints := 0
	nextBase := time.Now()
	for !s.stop.Load() && time.Since(start) < dur {
		time.Sleep(20 * time.Second)
		checkpoints++
		if time.Now().After(nextBase) || time.Since(start) >= dur {
			s.baselinePoint(time.Since(start), checkpoints)
			nextBase = time.Now().Add(time.Minute)
		} else {
			s.checkpoint()
		}
	}
	s.stop.Store(true)
	wg.Wait()
	s.baselinePoint(time.Since(start), checkpoints)
	for _, c := range s.chains {
		c.tx.Close()
		c.rx.Close()
	}
	s.report(time.Since(start), checkpoints)
	if len(s.samples) >= 2 {
		first, last := s.samples[1], s.samples[len(s.samples)-1] // [0] is before warm-up
		if last.rss > first.rss+first.rss/4+16<<20 {
			t.Errorf("daemon RSS grew from %d MiB to %d MiB", first.rss>>20, last.rss>>20)
		}
		if last.goroutines > first.goroutines+20 {
			t.Errorf("daemon goroutines grew from %d to %d", first.goroutines, last.goroutines)
		}
	}
}

// startTraffic sends sequence-numbered datagrams from a to b, 100 a second,
// until the chain's sockets close.
func (s *soak) startTraffic(c *soakChain) {
	const port = 9999
	must(s.t, c.b.Do(func() (err error) {
		c.rx, err = net.ListenUDP("udp4", &net.UDPAddr{Port: port})
		if err == nil {
			c.rx.SetReadBuffer(4 << 20)
		}
		return err
	}))
	must(s.t, c.a.Do(func() (err error) {
		c.tx, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.ParseIP(c.dst), Port: port})
		return err
	}))
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := c.rx.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if n != 200 || !validPayload(buf[:n]) {
				continue
			}
			seq := uint32(buf[0])<<24 | uint32(buf[1])<<16 | uint32(buf[2])<<8 | uint32(buf[3])
			c.mu.Lock()
			c.seen[seq]++
			c.mu.Unlock()
		}
	}()
	go func() {
		payload := make([]byte, 200)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			c.mu.Lock()
			if !c.paused {
				fillPayload(payload, uint32(c.sent))
				if _, err := c.tx.Write(payload); err != nil {
					c.mu.Unlock()
					return
				}
				c.sent++
			}
			c.mu.Unlock()
		}
	}()
}

// tenantChurn makes random changes to the tenant's own objects, as the
// tenant, until the soak stops.
func (s *soak) tenantChurn(c *soakChain) {
	cl := c.cli
	mon := func() string { return fmt.Sprintf("%s-mon%d", c.tenant, rand.IntN(4)) }
	extra := func() string { return fmt.Sprintf("%s-x%d", c.tenant, rand.IntN(3)) }
	dd := c.tenant + "-dd"
	hooks := []string{"xdp", "tc"}
	for !s.stop.Load() {
		time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
		s.churn.RLock()
		switch rand.IntN(14) {
		case 0, 1:
			s.do(cl, "create monitor", "POST", "/v1/cubes", map[string]any{"name": mon(), "type": "monitor", "hook": c.hook}, nil)
		case 2:
			s.do(cl, "delete monitor", "DELETE", "/v1/cubes/"+mon(), nil, nil)
		case 3, 4, 5:
			pos := []string{"first", "last"}[rand.IntN(2)]
			s.do(cl, "attach monitor", "POST", "/v1/attachments", map[string]any{"cube": mon(), "point": c.points[rand.IntN(len(c.points))], "position": pos}, nil)
		case 6:
			s.do(cl, "detach monitor", "DELETE", "/v1/attachments/"+mon(), nil, nil)
		case 7:
			s.do(cl, "create cube", "POST", "/v1/cubes", map[string]any{"name": extra(), "type": "portfwd", "hook": hooks[rand.IntN(2)],
				"ports": []map[string]any{{"name": "p0"}, {"name": "p1"}}}, nil)
		case 8:
			s.do(cl, "delete cube", "DELETE", "/v1/cubes/"+extra(), nil, nil)
		case 9:
			s.do(cl, "swap chain cube", "POST", "/v1/cubes/"+c.cubes[rand.IntN(len(c.cubes))]+"/swap", map[string]any{}, nil)
		case 10:
			if !s.do(cl, "add entry", "POST", "/v1/cubes/"+dd+"/tables/blacklist_src", map[string]any{"prefix": fmt.Sprintf("198.19.%d.%d", rand.IntN(4), rand.IntN(256))}, nil) {
				s.do(cl, "create ddos", "POST", "/v1/cubes", map[string]any{"name": dd, "type": "ddos", "hook": c.hook}, nil)
			}
		case 11:
			key := url.PathEscape(fmt.Sprintf("198.19.%d.%d/32", rand.IntN(4), rand.IntN(256)))
			s.do(cl, "delete entry", "DELETE", "/v1/cubes/"+dd+"/tables/blacklist_src/"+key, nil, nil)
		case 12:
			s.do(cl, "read", "GET", "/v1/cubes/"+mon()+"/views/counters", nil, nil)
			s.do(cl, "read", "GET", "/v1/cubes/"+c.cubes[0]+"/stats", nil, nil)
			s.do(cl, "read", "GET", "/v1/attachments", nil, nil)
			s.do(cl, "reset monitor counters", "DELETE", "/v1/cubes/"+mon()+"/stats", nil, nil)
		case 13:
			// nonsense: refused with a 4xx, nothing changes
			if s.do(cl, "bad request", "POST", "/v1/cubes", json.RawMessage(`{"name": "x", "type": `), nil) {
				s.failf("a truncated body was accepted")
			}
			other := s.chains[(indexOf(s.chains, c)+1)%len(s.chains)]
			if s.do(cl, "foreign read", "GET", "/v1/cubes/"+other.cubes[0], nil, nil) {
				s.failf("tenant %s read %s's cube", c.tenant, other.tenant)
			}
		}
		s.churn.RUnlock()
	}
}

func indexOf(cs []*soakChain, c *soakChain) int {
	for i, x := range cs {
		if x == c {
			return i
		}
	}
	return -1
}

// adminChurn re-applies the whole topology every second or so, each time
// deleting some of its own cubes and adding monitors on the chains in the
// same change (the change that used to lose a port's traffic).
func (s *soak) adminChurn() {
	for !s.stop.Load() {
		time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
		s.churn.RLock()
		var doc cube.Document
		if s.do(s.admin, "admin read topology", "GET", "/v1/topology", nil, &doc) {
			s.mutate(&doc)
			path := "/v1/topology"
			if rand.IntN(5) == 0 {
				path += "?dry_run=true"
			}
			s.do(s.admin, "admin apply", "PUT", path, doc, nil)
		}
		s.churn.RUnlock()
	}
}

// mutate deletes one or two of the administrator's cubes and adds others:
// monitors attached to a chain, and unpeered cubes.
func (s *soak) mutate(doc *cube.Document) {
	var keep []cube.DocCube
	dropped := map[string]bool{}
	for _, c := range doc.Cubes {
		if strings.HasPrefix(c.Name, "adm-") && rand.IntN(2) == 0 {
			dropped[c.Name] = true
			continue
		}
		keep = append(keep, c)
	}
	var att []cube.DocAttachment
	for _, a := range doc.Attachments {
		if !dropped[a.Cube] {
			att = append(att, a)
		}
	}
	have := map[string]bool{}
	for _, c := range keep {
		have[c.Name] = true
	}
	ch := s.chains[rand.IntN(len(s.chains))]
	name := fmt.Sprintf("adm-%s-mon%d", ch.tenant, rand.IntN(3))
	if !have[name] {
		keep = append(keep, cube.DocCube{Name: name, Type: "monitor", Hook: ch.hook})
		att = append(att, cube.DocAttachment{Cube: name, Point: ch.points[rand.IntN(len(ch.points))]})
	}
	if x := fmt.Sprintf("adm-x%d", rand.IntN(4)); !have[x] {
		keep = append(keep, cube.DocCube{Name: x, Type: "portfwd", Hook: []string{"xdp", "tc"}[rand.IntN(2)]})
	}
	doc.Cubes, doc.Attachments = keep, att
}

// checkpoint pauses the traffic, lets what is in flight arrive, and checks
// that nothing was lost and that the counters add up.
func (s *soak) checkpoint() {
	for _, c := range s.chains {
		c.mu.Lock()
		c.paused = true
		c.mu.Unlock()
	}
	time.Sleep(500 * time.Millisecond)
	for _, c := range s.chains {
		s.checkChain(c)
	}
	for _, c := range s.chains {
		c.mu.Lock()
		c.paused = false
		c.mu.Unlock()
	}
}

func (s *soak) checkChain(c *soakChain) {
	c.mu.Lock()
	sent, got, dup := c.sent, uint64(len(c.seen)), 0
	var missing []uint32
	for seq := uint32(0); uint64(seq) < sent; seq++ {
		switch n := c.seen[seq]; {
		case n == 0:
			if len(missing) < 10 {
				missing = append(missing, seq)
			}
		case n > 1:
			dup++
		}
	}
	c.mu.Unlock()
	if got != sent || dup > 0 {
		s.failf("chain %s: %d of %d datagrams arrived, %d duplicated (first missing: %v)", c.tenant, got, sent, dup, missing)
	}
	var st []struct {
		Cube  string `json:"cube"`
		Ports []struct {
			Port string `json:"port"`
			counters
		} `json:"ports"`
	}
	for _, name := range c.cubes {
		var one json.RawMessage
		if !s.do(s.admin, "check stats", "GET", "/v1/cubes/"+name+"/stats", nil, &one) {
			continue
		}
		var cs struct {
			Cube  string `json:"cube"`
			Ports []struct {
				Port string `json:"port"`
				counters
			} `json:"ports"`
		}
		json.Unmarshal(one, &cs)
		st = append(st, cs)
	}
	for _, cs := range st {
		for _, p := range cs.Ports {
			// a→b traffic only: in by p0, out by p1
			want := map[string][2]uint64{"p0": {sent, 0}, "p1": {0, sent}}[p.Port]
			if p.RxPackets != want[0] || p.TxPackets != want[1] || p.DropPackets != 0 {
				s.failf("chain %s: %s:%s counted rx %d tx %d drop %d, want rx %d tx %d (datagrams sent: %d)",
					c.tenant, cs.Cube, p.Port, p.RxPackets, p.TxPackets, p.DropPackets, want[0], want[1], sent)
			}
		}
	}
	var ifs map[string]counters
	if s.do(s.admin, "check stats", "GET", "/v1/interfaces/"+c.ra+"/stats", nil, &ifs) {
		if in := ifs[c.hook+"-ingress"]; in.RxPackets != sent {
			s.failf("chain %s: the stub on %s took %d frames, %d were sent (%v)", c.tenant, c.ra, in.RxPackets, sent, ifs)
		}
	}
	// monitors of this chain never count more than it carried
	var all []struct {
		Name   string `json:"name"`
		Type   string `json:"type"`
		Tenant string `json:"tenant"`
	}
	s.do(s.admin, "check stats", "GET", "/v1/cubes", nil, &all)
	for _, m := range all {
		if m.Type != "monitor" || !(strings.HasPrefix(m.Name, c.tenant+"-") || strings.HasPrefix(m.Name, "adm-"+c.tenant+"-")) {
			continue
		}
		var ms struct {
			Total counters `json:"total"`
		}
		if s.do(s.admin, "check stats", "GET", "/v1/cubes/"+m.Name+"/stats", nil, &ms) && ms.Total.RxPackets > sent {
			s.failf("monitor %s counted %d packets, its chain carried %d", m.Name, ms.Total.RxPackets, sent)
		}
	}
}

// baselinePoint stops the churn, brings the topology back to the chains
// alone, checks the traffic and measures what the daemon holds.
func (s *soak) baselinePoint(at time.Duration, checkpoints int) {
	s.churn.Lock()
	defer s.churn.Unlock()
	if err := s.admin.Do("PUT", "/v1/topology", s.base, nil); err != nil {
		s.failf("back to the baseline: %v", err)
	}
	s.checkpoint()
	p := &leakPoint{at: at, checkpoints: checkpoints, bpfFDs: map[string]int{}}
	filepath.Walk(s.d.bpffs, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			p.pins++
		}
		return nil
	})
	pid := s.d.cmd.Process.Pid
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(target, "anon_inode:bpf") {
			p.bpfFDs[strings.TrimPrefix(target, "anon_inode:")]++
		}
	}
	for _, c := range s.chains {
		for _, dev := range []string{c.ra, c.rb} {
			p.attached += attachedPrograms(dev)
		}
		for _, h := range []*netlab.Host{c.a, c.b} {
			h.Do(func() error {
				p.attached += attachedPrograms("eth0")
				return nil
			})
		}
	}
	var raw json.RawMessage
	if err := s.admin.Do("GET", "/metrics", nil, &raw); err != nil {
		s.failf("metrics: %v", err)
	}
	p.goroutines = int(metric(raw, "go_goroutines"))
	p.rss = int(metric(raw, "process_resident_memory_bytes"))
	p.heap = int(metric(raw, "go_memstats_heap_inuse_bytes"))
	s.samples = append(s.samples, p)
	if s.ref == nil {
		s.ref = p
		return
	}
	if p.pins != s.ref.pins || p.attached != s.ref.attached || fmt.Sprint(p.bpfFDs) != fmt.Sprint(s.ref.bpfFDs) {
		s.failf("at %v, back at the baseline, the daemon holds %d pins, %d interface programs, descriptors %v; at first %d, %d, %v",
			at.Round(time.Second), p.pins, p.attached, p.bpfFDs, s.ref.pins, s.ref.attached, s.ref.bpfFDs)
	}
}

// attachedPrograms counts the XDP and TCX programs on an interface of the
// current namespace.
func attachedPrograms(dev string) int {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return 0
	}
	n := 0
	if x := l.Attrs().Xdp; x != nil && x.ProgId != 0 {
		n++
	}
	for _, at := range []ebpf.AttachType{ebpf.AttachTCXIngress, ebpf.AttachTCXEgress} {
		if q, err := link.QueryPrograms(link.QueryOptions{Target: l.Attrs().Index, Attach: at}); err == nil {
			n += len(q.Programs)
		}
	}
	return n
}

// metric reads one unlabelled sample from the Prometheus text format.
func metric(text []byte, name string) float64 {
	for _, line := range bytes.Split(text, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return -1
}

func (s *soak) report(ran time.Duration, checkpoints int) {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %v, %d checkpoints, %d baseline points\n", ran.Round(time.Second), checkpoints, len(s.samples))
	for _, c := range s.chains {
		c.mu.Lock()
		fmt.Fprintf(&b, "  chain %-5s (%s, %d cubes): %d datagrams sent, %d arrived\n", c.tenant, c.hook, len(c.cubes), c.sent, len(c.seen))
		c.mu.Unlock()
	}
	var names []string
	total := uint64(0)
	s.ops.Range(func(k, v any) bool {
		names = append(names, k.(string))
		if !strings.HasSuffix(k.(string), "(4xx)") {
			total += v.(*atomic.Uint64).Load()
		}
		return true
	})
	sort.Strings(names)
	fmt.Fprintf(&b, "  %d requests:", total)
	for _, n := range names {
		v, _ := s.ops.Load(n)
		fmt.Fprintf(&b, " %s=%d;", n, v.(*atomic.Uint64).Load())
	}
	b.WriteString("\n  baseline points (time: pins, interface programs, bpf descriptors, goroutines, RSS MiB, heap MiB):\n")
	for _, p := range s.samples {
		fmt.Fprintf(&b, "    %6v: %d, %d, %v, %d, %.1f, %.1f\n", p.at.Round(time.Second), p.pins, p.attached, p.bpfFDs, p.goroutines,
			float64(p.rss)/(1<<20), float64(p.heap)/(1<<20))
	}
	s.t.Log(b.String())
}
