// Command edgenfd is the edgenf daemon: it owns the desired state, keeps the
// kernel's eBPF objects in line with it, and serves the REST API (unix socket,
// optional TCP with TLS, tokens or client certificates), Prometheus metrics
// and, with -p4rt-devices, P4Runtime for p4 cubes (unix socket, optional TCP
// with TLS).
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
	"strings"
	"syscall"
	"time"

	"github.com/edgenf/edgenf/internal/api"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/engine"
	_ "github.com/edgenf/edgenf/internal/nf/all"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	"github.com/edgenf/edgenf/internal/p4rt"
	"github.com/edgenf/edgenf/internal/privdir"
	"github.com/edgenf/edgenf/internal/tenant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

func main() {
	var (
		socket  = flag.String("socket", "/run/edgenf/edgenf.sock", "unix socket of the API (root only)")
		stateF  = flag.String("state", "/var/lib/edgenf/state.json", "state file")
		bpffs   = flag.String("bpffs", datapath.DefaultRoot, "bpffs directory for pinned objects")
		listen  = flag.String("listen", "", "also serve the API on this TCP address (needs -tokens or -tls-client-ca; TLS with -tls-cert, required off loopback)")
		tokens  = flag.String("tokens", "", "JSON file of bearer tokens for the TCP listener")
		destroy = flag.Bool("destroy", false, "remove every pinned object, program and the state file, then exit")
		p4rtL   = flag.String("p4rt-listen", "", "also serve P4Runtime (gRPC) on this TCP address, e.g. 0.0.0.0:9559: TLS only (-tls-cert), authenticated by client certificate or token")
		p4rtS   = flag.String("p4rt-socket", "", "unix socket of P4Runtime (root only; default: p4rt.sock beside -socket)")
		p4rtD   = flag.String("p4rt-devices", "", "serve P4Runtime for these p4 cubes: CUBE=ID[@TENANT],... (e.g. sw1=1,sw2=2@red: device 2 is tenant red's)")
		adoptE  = flag.Bool("adopt-empty", false, "start even though the state file names nothing while pinned objects exist, and adopt the state's emptiness: the pinned objects are removed")
		verbose = flag.Bool("v", false, "debug logging")
		check   = flag.Bool("check", false, "check this machine (kernel, eBPF features, bpffs, memlock, clang, XDP on the state's interfaces) without changing anything, then exit: 0 if edgenfd can run")
		man     = flag.Bool("man", false, "print this manual page, edgenfd(8), in roff and exit")
		tcAtt   = flag.String("tc-attach", "", "how TC programs go on interfaces: tcx (Linux 6.6), classic (clsact + cls_bpf, any kernel) or auto (default: $EDGENF_TC_ATTACH, else auto)")
		tcpF    tcpFlags
		p4inc   = flag.String("p4-include-dir", "", "directories (colon-separated) P4 programs' #include may use, besides the built-in core.p4 and v1model.p4")
		puntR   = flag.Int64("punt-rate", 20000, "punts a second each of the administrator's cubes may send to the slow path (0: no limit; a tenant's cubes have its punts_per_second quota)")
		puntB   = flag.Int64("punt-burst", 2000, "punts the administrator's cubes may send at once beyond -punt-rate (a tenant's: its punt_burst quota)")
		applyF  = flag.String("apply-file", "", "keep the topology equal to this `file` (YAML or JSON, as edgenf apply -f takes), applied at start and whenever it changes; a bad file changes nothing (see the user guide)")
		influxF influxFlags
	)
	tcpF.register(flag.CommandLine)
	influxF.register(flag.CommandLine) // influx.go
	est.register(flag.CommandLine)     // estimate.go
	flag.Parse()
	if *tcAtt != "" {
		if _, err := datapath.ParseTCAttach(*tcAtt); err != nil {
			fmt.Fprintln(os.Stderr, "edgenfd: -tc-attach:", err)
			os.Exit(2)
		}
		os.Setenv(datapath.TCAttachEnv, *tcAtt) // what datapath.Open follows
	}
	if *check {
		os.Exit(runCheck(*stateF, *bpffs))
	}
	if *man {
		writeMan(os.Stdout, flag.CommandLine)
		return
	}
	if err := raiseMemlock(); err != nil {
		fmt.Fprintln(os.Stderr, "edgenfd:", err)
		os.Exit(1)
	}
	if err := datapath.CheckKernel(); err != nil {
		fmt.Fprintln(os.Stderr, "edgenfd:", err)
		os.Exit(1)
	}
	nofile, nofileErr := raiseNofile() // nofile.go; logged below
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if nofileErr != nil {
		log.Warn("could not raise the open-files limit: each cube holds ~5 descriptors", "limit", nofile, "err", nofileErr)
	}
	pf := p4rtFlags{listen: *p4rtL, socket: *p4rtS, devices: *p4rtD}
	if pf.socket == "" {
		pf.socket = filepath.Join(filepath.Dir(*socket), "p4rt.sock")
	}
	if *p4inc != "" {
		if err := p4nf.SetIncludeDirs(strings.Split(*p4inc, ":")); err != nil {
			log.Error("edgenfd", "err", err)
			os.Exit(1)
		}
	}
	if err := (tenant.Quota{tenant.PuntsPerSecond: *puntR, tenant.PuntBurst: *puntB}).Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "edgenfd: -punt-rate/-punt-burst: %v\n", err)
		os.Exit(2)
	}
	cfg := engine.Config{PinRoot: *bpffs, StateFile: *stateF, Logger: log, AdoptEmpty: *adoptE, PuntRate: *puntR, PuntBurst: *puntB}
	if err := est.configure(&cfg, log); err != nil {
		log.Error("edgenfd", "err", err)
		os.Exit(1)
	}
	if err := run(log, cfg, *socket, *listen, *tokens, *destroy, pf, tcpF, influxF, *applyF); err != nil {
		log.Error("edgenfd", "err", err)
		os.Exit(1)
	}
}

// p4rtFlags configure the P4Runtime server.
type p4rtFlags struct {
	listen, socket, devices string
}

func run(log *slog.Logger, cfg engine.Config, socket, listen, tokenFile string, destroy bool, p4rtF p4rtFlags, tcpF tcpFlags, influxF influxFlags, applyPath string) error {
	if destroy {
		os.Remove(socket)
		os.Remove(p4rtF.socket)
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
	if toks != nil {
		cfg.Tenants, cfg.DefaultQuota = toks.Tenants, toks.DefaultQuota
	}
	devices, tenants, err := p4rt.ParseDevices(p4rtF.devices)
	if err != nil {
		return err
	}
	if p4rtF.listen != "" && len(devices) == 0 {
		return errors.New("-p4rt-listen needs -p4rt-devices CUBE=ID,...: the device ids P4Runtime clients name")
	}
	if err := tcpF.check(listen, p4rtF.listen, toks != nil); err != nil {
		return err
	}
	tlsCfg, err := tcpF.serverTLS(toks != nil)
	if err != nil {
		return err
	}
	influxCfg, err := influxF.config()
	if err != nil {
		return err
	}
	eng, err := engine.Open(cfg)
	if err != nil {
		return err
	}
	defer eng.Close()
	srv := api.New(eng, toks)
	srv.SetEstimate(est.chains)
	influxCtx, stopInflux := context.WithCancel(context.Background())
	influxDone, err := startInflux(influxCtx, log, influxCfg, eng, srv)
	if err != nil {
		stopInflux()
		return err
	}
	defer func() { stopInflux(); <-influxDone }() // its last push, before the engine closes
	if applyPath != "" {
		af := newApplyFile(applyPath, eng, log)
		for _, c := range af.collectors() {
			if err := srv.RegisterDaemonMetrics(c); err != nil {
				return err
			}
		}
		actx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { af.run(actx); close(done) }()
		defer func() { stop(); <-done }() // before the engine closes
	}

	// The API socket is made last: once it exists, every listener is
	// (scripts and tests wait for it).
	servers := []*http.Server{{Handler: srv.Unix(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: tcpF.idleTimeout}}
	listeners := []net.Listener{nil}
	if listen != "" {
		tl, err := tcpF.listen(listen)
		if err != nil {
			return err
		}
		servers = append(servers, tcpF.httpServer(srv, tlsCfg))
		listeners = append(listeners, tl)
	}
	errc := make(chan error, len(servers)+2)
	if len(devices) > 0 {
		ps := p4rt.New(p4rt.Config{Engine: eng, Devices: devices, Tenants: tenants, Tokens: toks.Identity, Logger: log})
		defer ps.Stop()
		pl, err := listenUnix(p4rtF.socket)
		if err != nil {
			return err
		}
		defer os.Remove(p4rtF.socket)
		go func() { errc <- ps.Serve(pl) }()
		if p4rtF.listen != "" {
			tl, err := tcpF.listen(p4rtF.listen)
			if err != nil {
				return err
			}
			// the TLS handshake within 10 s; a connection without calls
			// (streams count) closed after the idle timeout
			go func() {
				errc <- ps.ServeTLS(tl, tlsCfg, grpc.ConnectionTimeout(10*time.Second),
					grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: tcpF.idleTimeout}))
			}()
		}
		log.Info("P4Runtime server", "socket", p4rtF.socket, "tcp", p4rtF.listen, "devices", p4rtF.devices)
	}
	if listeners[0], err = listenUnix(socket); err != nil {
		return err
	}
	for i := range servers {
		go func(i int) {
			if servers[i].TLSConfig != nil {
				errc <- servers[i].ServeTLS(listeners[i], "", "")
				return
			}
			errc <- servers[i].Serve(listeners[i])
		}(i)
	}
	log.Info("edgenfd ready", "socket", socket, "tcp", listen, "tls", tlsCfg != nil, "bpffs", cfg.PinRoot, "state", cfg.StateFile)

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
	// a clean stop leaves the whole state in the state file
	if err := eng.Checkpoint(); err != nil {
		log.Warn("state not folded into one snapshot; the journal keeps it", "err", err)
	}
	return nil
}

// listenUnix opens the API socket, readable and writable by root only.
func listenUnix(path string) (net.Listener, error) {
	if err := privdir.Ensure(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket: %w", err)
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
