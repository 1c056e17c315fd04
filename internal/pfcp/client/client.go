// Package client is a small PFCP control-plane client: what an SMF sends
// to a UPF (associations, sessions) and answers (heartbeats, reports). The
// demo, the benchmark and the tests drive the UPF with it; it is not an
// SMF.
package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/pfcp"
)

// Client talks PFCP with one UPF from one local address.
type Client struct {
	conn     *net.UDPConn
	upf      netip.AddrPort
	Node     pfcp.NodeID
	Recovery time.Time

	mu      sync.Mutex
	seq     uint32
	pending map[uint32]chan *pfcp.Message
	reports chan *pfcp.Message
	updates chan *pfcp.Message
	done    chan struct{}
}

// Dial opens a client on local (port 0: any) towards the UPF.
func Dial(local, upf netip.AddrPort) (*Client, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(4 << 20)
	c := &Client{conn: conn, upf: upf, Node: pfcp.NodeID{Addr: local.Addr()}, Recovery: time.Now().Truncate(time.Second),
		pending: map[uint32]chan *pfcp.Message{}, reports: make(chan *pfcp.Message, 1024),
		updates: make(chan *pfcp.Message, 16), done: make(chan struct{})}
	go c.read()
	return c, nil
}

// Close stops the client.
func (c *Client) Close() error {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	return c.conn.Close()
}

// Addr is the client's address (the F-SEID address it gives).
func (c *Client) Addr() netip.AddrPort { return c.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Reports delivers the Session Report Requests the UPF sent (already
// answered with Request accepted).
func (c *Client) Reports() <-chan *pfcp.Message { return c.reports }

// Updates delivers the Association Update Requests the UPF sent (already
// answered with Request accepted).
func (c *Client) Updates() <-chan *pfcp.Message { return c.updates }

func (c *Client) read() {
	buf := make([]byte, pfcp.MaxMessage)
	for {
		n, from, err := c.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		// (the messages' IEs point into the octets: a copy, as buf is
		// read into again while they are in use)
		msgs, err := pfcp.Parse(append([]byte(nil), buf[:n]...))
		if err != nil && len(msgs) == 0 {
			continue
		}
		for _, m := range msgs {
			c.received(netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), m)
		}
	}
}

func (c *Client) received(from netip.AddrPort, m *pfcp.Message) {
	switch m.Type {
	case pfcp.HeartbeatRequest:
		c.send(from, m.Response(pfcp.TimeIE(pfcp.IERecoveryTimeStamp, c.Recovery)))
		return
	case pfcp.SessionReportRequest:
		resp := m.Response(pfcp.CauseIE(pfcp.CauseAccepted))
		resp.SEID = 0 // the UPF's SEID is not known here; the UPF ignores it
		c.send(from, resp)
		select {
		case c.reports <- m:
		default:
		}
		return
	case pfcp.AssociationUpdateRequest:
		c.send(from, m.Response(c.Node.IE(), pfcp.CauseIE(pfcp.CauseAccepted)))
		select {
		case c.updates <- m:
		default:
		}
		return
	}
	c.mu.Lock()
	ch := c.pending[m.Seq]
	delete(c.pending, m.Seq)
	c.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

func (c *Client) send(to netip.AddrPort, m *pfcp.Message) {
	_, _ = c.conn.WriteToUDPAddrPort(m.Marshal(), to)
}

// ErrTimeout is a request without a response.
var ErrTimeout = errors.New("pfcp: no response")

// Request sends a request and waits for its response, retransmitting it
// every second (the UPF answers retransmissions from its cache).
func (c *Client) Request(m *pfcp.Message, timeout time.Duration) (*pfcp.Message, error) {
	ch := make(chan *pfcp.Message, 1)
	c.mu.Lock()
	c.seq = (c.seq + 1) & 0xffffff
	m.Seq = c.seq
	c.pending[m.Seq] = ch
	c.mu.Unlock()
	b := m.Marshal()
	deadline := time.After(timeout)
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	if _, err := c.conn.WriteToUDPAddrPort(b, c.upf); err != nil {
		return nil, err
	}
	for {
		select {
		case r := <-ch:
			return r, nil
		case <-retry.C:
			_, _ = c.conn.WriteToUDPAddrPort(b, c.upf)
		case <-deadline:
			c.mu.Lock()
			delete(c.pending, m.Seq)
			c.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", m.Type, ErrTimeout)
		case <-c.done:
			return nil, net.ErrClosed
		}
	}
}

// CauseOf returns a response's cause.
func CauseOf(m *pfcp.Message) pfcp.Cause {
	if ie := m.IEs.Find(pfcp.IECause); ie != nil && len(ie.Value) > 0 {
		return pfcp.Cause(ie.Value[0])
	}
	return 0
}

// Associate sets up the association.
func (c *Client) Associate() (*pfcp.Message, error) {
	resp, err := c.Request(&pfcp.Message{Type: pfcp.AssociationSetupRequest, IEs: pfcp.IEs{
		c.Node.IE(), pfcp.TimeIE(pfcp.IERecoveryTimeStamp, c.Recovery)}}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if cause := CauseOf(resp); cause != pfcp.CauseAccepted {
		return resp, fmt.Errorf("association refused: %s", cause)
	}
	return resp, nil
}

// Session is a session as the client established it.
type Session struct {
	CPSEID uint64
	UPSEID uint64
	// Created are the Created PDR IEs of the response, by PDR ID.
	Created map[uint16]pfcp.IEs
}

// Establish sends a Session Establishment Request with the rule IEs.
func (c *Client) Establish(cpSEID uint64, rules ...*pfcp.IE) (*Session, *pfcp.Message, error) {
	f := pfcp.FSEID{SEID: cpSEID}
	if a := c.Addr().Addr(); a.Is4() {
		f.IPv4 = a
	} else {
		f.IPv6 = a
	}
	m := &pfcp.Message{Type: pfcp.SessionEstablishmentRequest, HasSEID: true,
		IEs: append(pfcp.IEs{c.Node.IE(), f.IE()}, rules...)}
	resp, err := c.Request(m, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	s := &Session{CPSEID: cpSEID, Created: map[uint16]pfcp.IEs{}}
	if ie := resp.IEs.Find(pfcp.IEFSEID); ie != nil {
		up, err := pfcp.ParseFSEID(ie.Value)
		if err == nil {
			s.UPSEID = up.SEID
		}
	}
	for _, ie := range resp.IEs.All(pfcp.IECreatedPDR) {
		if id, err := ie.Children.Find(pfcp.IEPDRID).U16(); err == nil {
			s.Created[id] = ie.Children
		}
	}
	if cause := CauseOf(resp); cause != pfcp.CauseAccepted {
		return s, resp, fmt.Errorf("establishment refused: %s", cause)
	}
	return s, resp, nil
}

// Modify sends a Session Modification Request.
func (c *Client) Modify(s *Session, ies ...*pfcp.IE) (*pfcp.Message, error) {
	resp, err := c.Request(&pfcp.Message{Type: pfcp.SessionModificationRequest, HasSEID: true, SEID: s.UPSEID, IEs: ies}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if cause := CauseOf(resp); cause != pfcp.CauseAccepted {
		return resp, fmt.Errorf("modification refused: %s", cause)
	}
	return resp, nil
}

// Delete sends a Session Deletion Request.
func (c *Client) Delete(s *Session) (*pfcp.Message, error) {
	resp, err := c.Request(&pfcp.Message{Type: pfcp.SessionDeletionRequest, HasSEID: true, SEID: s.UPSEID}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if cause := CauseOf(resp); cause != pfcp.CauseAccepted {
		return resp, fmt.Errorf("deletion refused: %s", cause)
	}
	return resp, nil
}

// TEIDOf reads the F-TEID of a Created PDR.
func (s *Session) TEIDOf(pdr uint16) (pfcp.FTEID, bool) {
	ie := s.Created[pdr].Find(pfcp.IEFTEID)
	if ie == nil {
		return pfcp.FTEID{}, false
	}
	f, err := pfcp.ParseFTEID(ie.Value)
	return f, err == nil
}

// UEAddrOf reads the UE IP Address of a Created PDR.
func (s *Session) UEAddrOf(pdr uint16) (pfcp.UEIPAddress, bool) {
	ie := s.Created[pdr].Find(pfcp.IEUEIPAddress)
	if ie == nil {
		return pfcp.UEIPAddress{}, false
	}
	u, err := pfcp.ParseUEIPAddress(ie.Value)
	return u, err == nil
}
