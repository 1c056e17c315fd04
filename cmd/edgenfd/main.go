// Command edgenfd is the edgenf daemon: it owns the desired state, keeps the
// kernel's eBPF objects in line with it, and serves the REST API (unix socket,
// optional TCP with tokens), Prometheus metrics and, with -p4rt-listen,
// P4Runtime for p4 cubes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/internal/api"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/all"
	"github.com/edgenf/edgenf/internal/p4rt"
	"github.com/edgenf/edgenf/internal/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	var (
		socket  = flag.String("socket", "/run/edgenf/edgenf.sock", "unix socket of the API (root only)")
		stateF  = flag.String("state", "/var/lib/edgenf/state.json", "state file")
		bpffs   = flag.String("bpffs", datapath.DefaultRoot, "bpffs directory for pinned objects")
		listen  = flag.String("listen", "", "also serve the API on this TCP address (needs -tokens)")
		tokens  = flag.String("tokens", "", "JSON file of bearer tokens for the TCP listener")
		destroy = flag.Bool("destroy", false, "remove every pinned object, program and the state file, then exit")
		p4rtL   = flag.String("p4rt-listen", "", "serve P4Runtime (gRPC, no TLS, no auth) on this TCP address, e.g. 127.0.0.1:9559; off when empty")
		p4rtD   = flag.String("p4rt-devices", "", "P4Runtime device ids of p4 cubes: CUBE=ID,... (e.g. sw1=1,sw2=2)")
		p4rtR   = flag.Bool("p4rt-allow-remote", false, "let -p4rt-listen take a non-loopback address (the server has no TLS and no authentication)")
		verbose = flag.Bool("v", false, "debug logging")
	)
	flag.Parse()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	pf := p4rtFlags{listen: *p4rtL, devices: *p4rtD, remote: *p4rtR}
	if err := run(log, *socket, *stateF, *bpffs, *listen, *tokens, *destroy, pf); err != nil {
		log.Error("edgenfd", "err", err)
		os.Exit(1)
	}
}

// p4rtFlags configure the P4Runtime server.
type p4rtFlags struct {
	listen, devices string
	remote          bool
}

// checkLocal refuses a P4Runtime address other hosts could reach unless
// asked for: anyone reaching it controls the data plane.
func (f p4rtFlags) checkLocal() error {
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return fmt.Errorf("-p4rt-listen %q: %v", f.listen, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) || f.remote {
		return nil
	}
	return fmt.Errorf("-p4rt-listen %q is not a loopback address: the P4Runtime server has no TLS and no authentication; add -p4rt-allow-remote to serve it anyway", f.listen)
}

func run(log *slog.Logger, socket, stateFile, bpffs, listen, tokenFile string, destroy bool, p4rtF p4rtFlags) error {
	cfg := engine.Config{PinRoot: bpffs, StateFile: stateFile, Logger: log}
	if destroy {
		os.Remove(socket)
		return engine.DestroyAt(cfg)
	}
	// Flags are checked before anything is opened: a bad command line
	// leaves the kernel and the state untouched.
	var toks *api.Tokens
	var err error
	if tokenFile != "" {
		if toks, err = api.LoadTokens(tokenFile); err != nil {
			return err
		}
	}
	if listen != "" && toks == nil {
		return errors.New("-listen needs -tokens: the TCP API is never open without a token")
	}
	devices, err := p4rt.ParseDevices(p4rtF.devices)
	if err != nil {
		return err
	}
	if p4rtF.listen != "" && len(devices) == 0 {
		return errors.New("-p4rt-listen needs -p4rt-devices CUBE=ID,...: the device ids P4Runtime clients name")
	}
	if p4rtF.listen != "" {
		if err := p4rtF.checkLocal(); err != nil {
			return err
		}
	}
	eng, err := engine.Open(cfg)
	if err != nil {
		return err
	}
	defer eng.Close()
	var p4rtL net.Listener
	if p4rtF.listen != "" {
		if p4rtL, err = net.Listen("tcp", p4rtF.listen); err != nil {
			return err
		}
		defer p4rtL.Close()
	}
	srv := api.New(eng, toks)
	reg := prometheus.NewRegistry()
	// the daemon's own health too (goroutines, memory, descriptors)
	reg.MustRegister(telemetry.NewCollector(eng), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	unixMux := http.NewServeMux()
	unixMux.Handle("/metrics", metrics)
	unixMux.Handle("/", srv.Unix())
	ul, err := listenUnix(socket)
	if err != nil {
		return err
	}
	servers := []*http.Server{{Handler: unixMux, ReadHeaderTimeout: 10 * time.Second}}
	listeners := []net.Listener{ul}
	if listen != "" {
		tl, err := net.Listen("tcp", listen)
		if err != nil {
			return err
		}
		tcpMux := http.NewServeMux()
		tcpMux.Handle("/metrics", metrics)
		tcpMux.Handle("/", srv)
		servers = append(servers, &http.Server{Handler: tcpMux, ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, tl)
	}
	errc := make(chan error, len(servers)+1)
	if p4rtL != nil {
		ps := p4rt.New(p4rt.Config{Engine: eng, Devices: devices, Logger: log})
		defer ps.Stop()
		go func() { errc <- ps.Serve(p4rtL) }()
		log.Info("P4Runtime server", "listen", p4rtL.Addr().String(), "devices", p4rtF.devices)
	}
	for i := range servers {
		go func(i int) { errc <- servers[i].Serve(listeners[i]) }(i)
	}
	log.Info("edgenfd ready", "socket", socket, "tcp", listen, "bpffs", bpffs, "state", stateFile)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Info("stopping; the datapath keeps forwarding", "signal", s.String())
	case err := <-errc:
		log.Error("server", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(ctx)
	}
	os.Remove(socket)
	return nil
}

// listenUnix opens the API socket, readable and writable by root only.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("another edgenfd is serving %s", path)
	}
	os.Remove(path)
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	return l, os.Chmod(path, 0o600)
}
