// Package agent is the UPF's PFCP agent: the N4 endpoint of a upf cube.
// It speaks PFCP (internal/pfcp) with SMFs: heartbeats, associations,
// session establishment, modification and deletion, which it turns into
// changes of the cube's sessions table (the same entries the API writes,
// validated, installed in the kernel and persisted by the engine), and
// session reports (usage, downlink data, error indications) the datapath
// asks for. It answers retransmitted requests from a cache of its
// responses, retransmits its own requests, and commits the session requests
// that arrive together as one change: one journal write, not one per
// request. Batches are staged in the order they arrived; one waits for its
// change to be durable (the engine's group commit) while the next is
// staged, so the disk's fsyncs are shared instead of serialising them.
package agent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/nf/upf/model"
	"github.com/edgenf/edgenf/internal/pfcp"
)

// Config is what an agent needs to run.
type Config struct {
	// Cube is the upf cube's name (for logs).
	Cube string
	// Listen is the UDP address of the N4 endpoint.
	Listen netip.AddrPort
	// Settings are the cube's settings (Node ID, pools, timers, recovery
	// time).
	Settings *model.Config
	// Tunnels are the addresses of the cube's GTP-U ports (n3, n9), which
	// F-TEIDs the UPF allocates carry.
	Tunnels map[string][2]netip.Addr // port → IPv4, IPv6
	// Associations are those the table held at start.
	Associations []model.Association
	Store        cube.Store
	Datapath     Datapath
	Logf         func(format string, args ...any)
}

// Agent is a running N4 endpoint.
type Agent struct {
	conn *net.UDPConn
	in   chan inbound
	ev   chan Event
	done chan struct{}
	once sync.Once

	store cube.Store
	dp    Datapath
	logf  func(format string, args ...any)

	mu       sync.Mutex
	cfg      Config
	nodeID   pfcp.NodeID
	assoc    map[string]*association // by Node ID
	cache    *responseCache
	pending  map[uint32]*request // our requests, by sequence number
	seq      uint32
	stats    Stats
	teidNext uint32
	ueNext   map[int]uint64 // pool → next candidate
	// draining: the settings say drain (release.go).
	draining bool

	// Serve's goroutine only: the session requests of the batch being
	// read; a token per batch of them in flight; closed once the last
	// batch dispatched has been staged.
	batch   []*sessionRequest
	commits chan struct{}
	staged  chan struct{}
}

// commitsInFlight bounds the batches of session requests being committed:
// one staged, the others waiting for their change to be durable.
const commitsInFlight = 4

// Stats count what the agent did.
type Stats struct {
	// Messages received and sent, by type name.
	Received map[string]uint64 `json:"received"`
	Sent     map[string]uint64 `json:"sent"`
	// Causes of the responses sent, by cause name.
	Causes map[string]uint64 `json:"causes"`
	// Retransmitted requests answered from the cache.
	Duplicates uint64 `json:"duplicates"`
	// Malformed datagrams dropped without an answer.
	Discarded uint64 `json:"discarded"`
	// Requests of the UPF's that got no answer after every retransmission.
	Timeouts uint64 `json:"timeouts"`
	// Reports the UPF asked to send but could not (no association).
	ReportsDropped uint64 `json:"reports_dropped"`
}

type inbound struct {
	from netip.AddrPort
	b    []byte
}

// eventQueue bounds the events waiting to be sent as reports.
const eventQueue = 4096

// New binds the N4 endpoint and starts serving it.
func New(cfg Config) (*Agent, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("PFCP endpoint %s: %w", cfg.Listen, err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	a := &Agent{
		conn: conn, in: make(chan inbound, 1024), ev: make(chan Event, eventQueue), done: make(chan struct{}),
		store: cfg.Store, dp: cfg.Datapath, logf: cfg.Logf,
		assoc: map[string]*association{}, cache: newResponseCache(), pending: map[uint32]*request{},
		seq: rand.Uint32N(1 << 23), ueNext: map[int]uint64{},
		commits: make(chan struct{}, commitsInFlight), staged: make(chan struct{}),
		stats: Stats{Received: map[string]uint64{}, Sent: map[string]uint64{}, Causes: map[string]uint64{}},
	}
	if a.logf == nil {
		a.logf = func(string, ...any) {}
	}
	close(a.staged)
	a.setConfig(cfg)
	for _, as := range cfg.Associations {
		a.assoc[as.Node] = restoreAssociation(as)
	}
	go a.read()
	go a.serve()
	go a.timers()
	a.syncDrain()
	return a, nil
}

// Addr is the endpoint's address.
func (a *Agent) Addr() netip.AddrPort { return a.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Update takes new settings (the endpoint's address is not among them: a
// new address needs a new agent).
func (a *Agent) Update(cfg Config) {
	a.mu.Lock()
	a.setConfig(cfg)
	a.mu.Unlock()
	a.syncDrain()
}

func (a *Agent) setConfig(cfg Config) {
	a.cfg = cfg
	if id := cfg.Settings.NodeID; id != "" {
		if ad, err := netip.ParseAddr(id); err == nil {
			a.nodeID = pfcp.NodeID{Addr: ad}
		} else {
			a.nodeID = pfcp.NodeID{FQDN: id}
		}
	} else {
		a.nodeID = pfcp.NodeID{Addr: cfg.Listen.Addr()}
	}
	if base, n := cfg.Settings.ChosenTEIDs(); n > 0 && a.teidNext-base >= n {
		a.teidNext = base + rand.Uint32N(n)
	}
}

// chosenCapacity is how many TEIDs the UPF can have chosen at once.
func (a *Agent) chosenCapacity() uint32 {
	_, n := a.cfg.Settings.ChosenTEIDs()
	return min(n, a.cfg.Settings.TEIDSlots())
}

// Stop closes the endpoint. It does not wait for the agent's goroutines:
// one may be waiting for the engine, whose lock the caller may hold.
func (a *Agent) Stop() {
	a.once.Do(func() {
		close(a.done)
		a.conn.Close()
	})
}

// Notify queues an event for a report; false if the queue is full.
func (a *Agent) Notify(ev Event) bool {
	select {
	case a.ev <- ev:
		return true
	default:
		return false
	}
}

// read moves datagrams from the socket to the queue the server drains.
func (a *Agent) read() {
	buf := make([]byte, pfcp.MaxMessage)
	for {
		n, from, err := a.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				close(a.in)
				return
			}
			continue
		}
		b := make([]byte, n)
		copy(b, buf[:n])
		select {
		case a.in <- inbound{netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), b}:
		case <-a.done:
			close(a.in)
			return
		}
	}
}

// maxBatch bounds the session requests committed as one change.
const maxBatch = 256

// serve handles what arrives: every datagram waiting is taken at once, and
// the session requests among them are committed together.
func (a *Agent) serve() {
	for {
		var batch []inbound
		select {
		case m, ok := <-a.in:
			if !ok {
				return
			}
			batch = append(batch, m)
		case ev := <-a.ev:
			a.report(ev)
			continue
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case m, ok := <-a.in:
				if !ok {
					break drain
				}
				batch = append(batch, m)
			default:
				break drain
			}
		}
		a.handle(batch)
	}
}

// handle processes a batch of datagrams.
func (a *Agent) handle(batch []inbound) {
	for _, in := range batch {
		msgs, err := pfcp.Parse(in.b)
		if err != nil {
			if len(msgs) == 0 {
				a.reject(in.from, err)
				continue
			}
		}
		for _, m := range msgs {
			a.message(in.from, m)
		}
		if err != nil {
			a.reject(in.from, err)
		}
	}
	a.dispatch()
}

// dispatch commits the batch's session requests in a goroutine of its own,
// once the batch before them has been staged: requests are staged in the
// order they arrived, and each batch waits for durability while the next
// is staged.
func (a *Agent) dispatch() {
	sess := a.batch
	if len(sess) == 0 {
		return
	}
	a.batch = nil
	a.commits <- struct{}{}
	prev, next := a.staged, make(chan struct{})
	a.staged = next
	go func() {
		defer func() { <-a.commits }()
		<-prev
		a.sessions(sess, next)
	}()
}

// settle returns once every session request received has been staged: an
// association change must not overtake them.
func (a *Agent) settle() {
	a.dispatch()
	<-a.staged
}

// message handles one parsed message; session requests join the batch.
func (a *Agent) message(from netip.AddrPort, m *pfcp.Message) {
	a.count(a.stats.Received, m.Type.String())
	if !m.Type.Known() {
		a.countDiscard()
		return
	}
	if !m.Type.IsRequest() {
		a.response(from, m)
		return
	}
	if resp, ok := a.cache.get(from, m.Seq); ok {
		a.mu.Lock()
		a.stats.Duplicates++
		a.mu.Unlock()
		if resp != nil { // nil: being processed
			a.send(from, resp)
		}
		return
	}
	if err := pfcp.Check(m); err != nil {
		a.reject(from, err)
		return
	}
	if m.Type.IsSession() {
		a.cache.put(from, m.Seq, nil)
		a.batch = append(a.batch, &sessionRequest{from: from, msg: m})
		return
	}
	if m.Type != pfcp.HeartbeatRequest {
		a.settle()
	}
	a.node(from, m)
}

// reject answers a malformed request with the cause its error carries (or
// drops it silently when there is nothing to answer).
func (a *Agent) reject(from netip.AddrPort, err error) {
	e := pfcp.AsError(err)
	a.logf("PFCP from %s: %v", from, e)
	h := e.Header
	if e.Cause == 0 || h == nil || !h.Type.IsRequest() || !h.Type.Known() {
		a.countDiscard()
		return
	}
	if e.VersionNotSupported() {
		a.sendMsg(from, &pfcp.Message{Type: pfcp.VersionNotSupportedResponse, Seq: h.Seq})
		return
	}
	resp := h.Response(pfcp.CauseIE(e.Cause))
	if e.Offending != 0 {
		resp.IEs = append(resp.IEs, pfcp.OffendingIE(e.Offending))
	}
	a.withNodeID(resp)
	if h.Type.IsSession() {
		resp.SEID = a.cpSEIDOf(h)
	}
	a.cache.put(from, h.Seq, a.sendMsg(from, resp))
}

// withNodeID puts the UPF's Node ID first in responses whose table has one.
func (a *Agent) withNodeID(m *pfcp.Message) {
	for _, f := range pfcp.Fields(m.Type) {
		if f.Type == pfcp.IENodeID {
			m.IEs = append(pfcp.IEs{a.nodeID.IE()}, m.IEs...)
			return
		}
	}
}

// cpSEIDOf is the SEID to answer a session request with: the SMF's, found
// by the UPF's SEID the request carries.
func (a *Agent) cpSEIDOf(h *pfcp.Message) uint64 {
	if h.Type == pfcp.SessionEstablishmentRequest {
		if ie := h.IEs.Find(pfcp.IEFSEID); ie != nil {
			if f, err := pfcp.ParseFSEID(ie.Value); err == nil {
				return f.SEID
			}
		}
		return 0
	}
	if s, err := a.readSession(h.SEID); err == nil && s != nil {
		return s.CPSEID
	}
	return 0
}

func (a *Agent) count(m map[string]uint64, k string) {
	a.mu.Lock()
	m[k]++
	a.mu.Unlock()
}

func (a *Agent) countDiscard() {
	a.mu.Lock()
	a.stats.Discarded++
	a.mu.Unlock()
}

// sendMsg encodes and sends a message; it returns the octets.
func (a *Agent) sendMsg(to netip.AddrPort, m *pfcp.Message) []byte {
	b := a.encode(m)
	a.send(to, b)
	return b
}

// encode encodes a message to be sent, and counts it.
func (a *Agent) encode(m *pfcp.Message) []byte {
	b := m.Marshal()
	a.mu.Lock()
	a.stats.Sent[m.Type.String()]++
	if c := m.IEs.Find(pfcp.IECause); c != nil && len(c.Value) > 0 && !m.Type.IsRequest() {
		a.stats.Causes[pfcp.Cause(c.Value[0]).String()]++
	}
	a.mu.Unlock()
	return b
}

func (a *Agent) send(to netip.AddrPort, b []byte) {
	if _, err := a.conn.WriteToUDPAddrPort(b, to); err != nil && !errors.Is(err, net.ErrClosed) {
		a.logf("PFCP to %s: %v", to, err)
	}
}

// Snapshot returns the agent's counters.
func (a *Agent) Snapshot() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	cp := func(m map[string]uint64) map[string]uint64 {
		out := make(map[string]uint64, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	s := a.stats
	s.Received, s.Sent, s.Causes = cp(a.stats.Received), cp(a.stats.Sent), cp(a.stats.Causes)
	return s
}

// recovery is the UPF's Recovery Time Stamp.
func (a *Agent) recovery() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.Settings.Recovery()
}
