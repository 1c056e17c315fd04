// Package client talks to edgenfd's REST API over its unix socket or TCP.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// DefaultSocket is where edgenfd listens by default.
const DefaultSocket = "/run/edgenf/edgenf.sock"

// Client is an API client.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New connects through a unix socket (server "") or to a TCP server URL with
// a bearer token.
func New(socket, server, token string) *Client {
	if server != "" {
		return &Client{base: strings.TrimRight(server, "/"), token: token, http: &http.Client{Timeout: 5 * time.Minute}}
	}
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
		var e struct {
			Error *Error `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != nil {
			return e.Error
		}
		return &Error{Code: resp.StatusCode, Message: strings.TrimSpace(string(data))}
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
