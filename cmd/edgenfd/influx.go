package main

// The InfluxDB export: every series /metrics has, pushed as line protocol.

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/api"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/telemetry"
	"github.com/edgenf/edgenf/internal/tenant"
)

// influxFlags configure the export.
type influxFlags struct {
	url, db, org, bucket, tokenFile string
	interval                        time.Duration
	bufferMiB                       int
}

func (f *influxFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "influx-url", "", "push every metric to InfluxDB at this URL (e.g. http://127.0.0.1:8086), as line protocol")
	fs.StringVar(&f.db, "influx-db", "", "InfluxDB 1.x database to write to (/write)")
	fs.StringVar(&f.org, "influx-org", "", "InfluxDB 2.x organisation (with -influx-bucket: /api/v2/write)")
	fs.StringVar(&f.bucket, "influx-bucket", "", "InfluxDB 2.x bucket")
	fs.StringVar(&f.tokenFile, "influx-token-file", "", "file holding the InfluxDB 2.x API token, or user:password for 1.x (not readable by others)")
	fs.DurationVar(&f.interval, "influx-interval", 10*time.Second, "time between two pushes to InfluxDB")
	fs.IntVar(&f.bufferMiB, "influx-buffer-mib", 32, "MiB of gzipped line protocol kept while InfluxDB does not take it; past it the oldest points are dropped")
}

// config checks the flags and reads the token file: the export's
// configuration, nil without -influx-url.
func (f *influxFlags) config() (*telemetry.InfluxConfig, error) {
	if f.url == "" {
		if f.db != "" || f.org != "" || f.bucket != "" || f.tokenFile != "" {
			return nil, fmt.Errorf("-influx-db, -influx-org, -influx-bucket and -influx-token-file need -influx-url")
		}
		return nil, nil
	}
	if f.bufferMiB < 1 {
		return nil, fmt.Errorf("-influx-buffer-mib %d: want at least 1", f.bufferMiB)
	}
	cfg := &telemetry.InfluxConfig{URL: f.url, Database: f.db, Org: f.org, Bucket: f.bucket, Interval: f.interval, MaxBuffer: f.bufferMiB << 20}
	if f.tokenFile != "" {
		st, err := os.Stat(f.tokenFile)
		if err != nil {
			return nil, err
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("InfluxDB token file %s is readable by others (mode %v): chmod 600 it", f.tokenFile, st.Mode().Perm())
		}
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return nil, err
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	// checked now, before the engine opens: a bad command line changes nothing
	if _, err := telemetry.NewInflux(*cfg, nil); err != nil {
		return nil, err
	}
	return cfg, nil
}

// startInflux runs the export until ctx ends; done is closed once its last
// flush is over.
func startInflux(ctx context.Context, log *slog.Logger, cfg *telemetry.InfluxConfig, eng *engine.Engine, srv *api.Server) (done chan struct{}, err error) {
	done = make(chan struct{})
	if cfg == nil {
		close(done)
		return done, nil
	}
	cfg.Logger = log
	x, err := telemetry.NewInflux(*cfg, func() []telemetry.Point { return telemetry.Gather(eng, tenant.Admin) })
	if err != nil {
		return nil, err
	}
	if err := srv.RegisterDaemonMetrics(x); err != nil {
		return nil, err
	}
	go func() {
		defer close(done)
		x.Run(ctx)
	}()
	log.Info("InfluxDB export", "url", cfg.URL, "database", cfg.Database, "org", cfg.Org, "bucket", cfg.Bucket, "interval", cfg.Interval)
	return done, nil
}
