// Package client talks to edgenfd's REST API over its unix socket or TCP.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/tlsauth"
)

// DefaultSocket is where edgenfd listens by default.
const DefaultSocket = "/run/edgenf/edgenf.sock"

// Client is an API client.
type Client struct {
	base  string
	token string
	http  *http.Client
	err   error // from New: every call fails with it
}

// New connects through a unix socket (server "") or to a TCP server URL with
// a bearer token. A bad URL makes every call fail.
func New(socket, server, token string) *Client {
	c, err := Open(Options{Socket: socket, Server: server, Token: token})
	if err != nil {
		return Failing(err)
	}
	return c
}

// Failing is a client every call of which fails with err.
func Failing(err error) *Client { return &Client{err: err} }

// Options say how to reach edgenfd.
type Options struct {
	Socket string // unix socket (when Server is empty)
	Server string // http:// or https:// URL of the TCP API
	Token  string // bearer token for Server
	// TLS: the CA of the server's certificate (empty: the system's roots)
	// and an optional client certificate, for an https:// Server.
	TLS tlsauth.ClientFiles
}

// Open builds a client; with TLS files it checks them and the URL.
func Open(o Options) (*Client, error) {
	server := o.Server
	if server == "" {
		if !o.TLS.Empty() {
			return nil, errors.New("TLS files (--ca, --cert, --key) are for a TCP server: give --server https://HOST:PORT")
		}
		return newUnix(o.Socket), nil
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: want http://HOST:PORT or https://HOST:PORT", server)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		if tr.TLSClientConfig, err = tlsauth.ClientConfig(o.TLS); err != nil {
			return nil, err
		}
	} else if !o.TLS.Empty() {
		return nil, fmt.Errorf("server %q is plain http: TLS files need an https:// URL", server)
	}
	return &Client{base: strings.TrimRight(server, "/"), token: o.Token, http: &http.Client{Transport: tr, Timeout: 5 * time.Minute}}, nil
}

func newUnix(socket string) *Client {
	if socket == "" {
		socket = DefaultSocket
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{base: "http://edgenfd", http: &http.Client{Transport: tr, Timeout: 5 * time.Minute}}
}

// Error is an error reply of the API.
type Error struct {
	Code    int    `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return e.Message
}

// Do sends a request with an optional JSON body and decodes the reply into
// out (if not nil).
func (c *Client) Do(method, path string, body, out any) error {
	if c.err != nil {
		return c.err
	}
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case json.RawMessage:
		rd = bytes.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach edgenfd (is it running? see `edgenfd -h`): %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		return replyError(resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if raw, ok := out.(*json.RawMessage); ok {
			*raw = append((*raw)[:0], data...)
			return nil
		}
		return json.Unmarshal(data, out)
	}
	return nil
}

// replyError is the error an API reply of status code (>= 400) says.
func replyError(code int, data []byte) error {
	var e struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error != nil {
		return e.Error
	}
	return &Error{Code: code, Message: strings.TrimSpace(string(data))}
}

// Stream POSTs body as JSON and returns the reply's body to read as it
// comes, with no time limit but ctx (a capture's pcapng stream). The
// caller closes it.
func (c *Client) Stream(ctx context.Context, path string, body any) (io.ReadCloser, error) {
	if c.err != nil {
		return nil, c.err
	}
	enc, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+path, bytes.NewReader(enc))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach edgenfd (is it running? see `edgenfd -h`): %w", err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, replyError(resp.StatusCode, data)
	}
	return resp.Body, nil
}
