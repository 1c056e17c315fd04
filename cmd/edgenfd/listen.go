package main

// The daemon's TCP listeners (REST API, P4Runtime): TLS, who may connect,
// and the limits that keep one client from holding the server.

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/edgenf/edgenf/internal/tlsauth"
	"golang.org/x/net/netutil"
)

// tcpFlags configure the TCP listeners.
type tcpFlags struct {
	tls                       tlsauth.ServerFiles
	readTimeout, writeTimeout time.Duration
	idleTimeout               time.Duration
	maxConns                  int
}

func (f *tcpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tls.Cert, "tls-cert", "", "TLS certificate (PEM) of the TCP listeners (-listen, -p4rt-listen); reloaded when the file changes")
	fs.StringVar(&f.tls.Key, "tls-key", "", "TLS private key (PEM) of -tls-cert")
	fs.StringVar(&f.tls.ClientCA, "tls-client-ca", "", "CA bundle (PEM) of client certificates: clients may authenticate with a certificate naming edgenf://admin or edgenf://tenant/NAME (see the user guide)")
	fs.DurationVar(&f.readTimeout, "http-read-timeout", time.Minute, "TCP API: time to read a request, body included")
	fs.DurationVar(&f.writeTimeout, "http-write-timeout", 2*time.Minute, "TCP API: time to handle a request and write the reply (long polls wait beyond it)")
	fs.DurationVar(&f.idleTimeout, "http-idle-timeout", 2*time.Minute, "TCP API: how long an idle keep-alive connection stays open")
	fs.IntVar(&f.maxConns, "max-conns", 256, "connections open at once on each TCP listener; more wait to be accepted")
}

// check validates the flags against the listeners asked for.
func (f *tcpFlags) check(listen, p4rtListen string, haveTokens bool) error {
	if (f.tls.Cert == "") != (f.tls.Key == "") {
		return errors.New("-tls-cert and -tls-key go together")
	}
	if f.tls.ClientCA != "" && f.tls.Cert == "" {
		return errors.New("-tls-client-ca needs -tls-cert and -tls-key: client certificates are checked in the TLS handshake")
	}
	if f.maxConns < 1 {
		return fmt.Errorf("-max-conns %d: want at least 1", f.maxConns)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"-http-read-timeout", f.readTimeout}, {"-http-write-timeout", f.writeTimeout}, {"-http-idle-timeout", f.idleTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("%s %v: want a positive duration", d.name, d.v)
		}
	}
	if listen != "" {
		if !haveTokens && f.tls.ClientCA == "" {
			return errors.New("-listen needs -tokens or -tls-client-ca: the TCP API is never open without authentication")
		}
		if f.tls.Cert == "" {
			if err := loopbackOnly(listen); err != nil {
				return fmt.Errorf("-listen %q without TLS: %v; add -tls-cert and -tls-key (bearer tokens must not cross a network in clear text)", listen, err)
			}
		}
	}
	if p4rtListen != "" {
		if f.tls.Cert == "" {
			return errors.New("-p4rt-listen needs -tls-cert and -tls-key: P4Runtime is served over TCP with TLS only (local controllers use the unix socket -p4rt-socket)")
		}
		if !haveTokens && f.tls.ClientCA == "" {
			return errors.New("-p4rt-listen needs -tokens or -tls-client-ca: P4Runtime over TCP is never open without authentication")
		}
	}
	return nil
}

// loopbackOnly accepts addresses only this host can reach.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return errors.New("not a loopback address")
}

// serverTLS is the TLS configuration of the TCP listeners (nil: no TLS).
// Without tokens, a client certificate is the only way in and is required
// in the handshake.
func (f *tcpFlags) serverTLS(haveTokens bool) (*tls.Config, error) {
	if f.tls.Cert == "" {
		return nil, nil
	}
	return tlsauth.ServerConfig(f.tls, !haveTokens)
}

// listen opens a TCP listener that accepts at most -max-conns connections
// at once.
func (f *tcpFlags) listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return netutil.LimitListener(l, f.maxConns), nil
}

// httpServer is the TCP API's server, with its timeouts. (A TLS handshake
// must finish within the header timeout.)
func (f *tcpFlags) httpServer(h http.Handler, cfg *tls.Config) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         cfg,
		ReadHeaderTimeout: min(10*time.Second, f.readTimeout),
		ReadTimeout:       f.readTimeout,
		WriteTimeout:      f.writeTimeout,
		IdleTimeout:       f.idleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}
