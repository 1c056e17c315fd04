package main

// -apply-file: the daemon keeps its topology equal to a file, typically a
// ConfigMap mounted into its pod, so that a cluster keeps each node's
// desired chains in Kubernetes objects. The file is applied like `edgenf
// apply -f` at start and whenever its content changes (a ConfigMap update
// swaps the mounted file's symlink: the content is what is compared, not
// the modification time). A file that does not apply (unreadable, not YAML,
// invalid, refused by the engine) changes nothing: the running state stays,
// the error is logged and counted, and the apply is retried with back-off
// (the file may name an interface that is not there yet). The pods that
// edgenf-cni plugged in are kept by every apply (engine/endpoints.go).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/topofile"
)

// applyFile watches one topology file.
type applyFile struct {
	path     string
	eng      *engine.Engine
	log      *slog.Logger
	interval time.Duration // how often the file is read
	maxRetry time.Duration // the longest wait before a failed apply is tried again

	applied             *prometheus.CounterVec // by result
	ok, lastSuccess, at prometheus.Gauge
}

func newApplyFile(path string, eng *engine.Engine, log *slog.Logger) *applyFile {
	return &applyFile{
		path: path, eng: eng, log: log.With("apply_file", path), interval: time.Second, maxRetry: time.Minute,
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgenf_apply_file_applies_total",
			Help: "Applies of -apply-file, by result (ok, unchanged, error)."}, []string{"result"}),
		ok: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgenf_apply_file_ok",
			Help: "1 if the -apply-file content last read is applied, 0 if it was refused (the running state is the last good one)."}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgenf_apply_file_last_success_timestamp_seconds",
			Help: "When -apply-file was last applied (or found applied), Unix time."}),
		at: prometheus.NewGauge(prometheus.GaugeOpts{Name: "edgenf_apply_file_last_attempt_timestamp_seconds",
			Help: "When -apply-file was last tried, Unix time."}),
	}
}

// collectors are the watcher's metrics, for the administrator's /metrics.
func (a *applyFile) collectors() []prometheus.Collector {
	return []prometheus.Collector{a.applied, a.ok, a.lastSuccess, a.at}
}

// run applies the file until ctx ends.
func (a *applyFile) run(ctx context.Context) {
	var last, failed [32]byte // content last applied, last refused
	var retry time.Duration
	var next time.Time
	tick := time.NewTicker(a.interval)
	defer tick.Stop()
	for {
		b, err := topofile.Read(a.path)
		sum := sha256.Sum256(b)
		if err != nil {
			sum = sha256.Sum256([]byte(err.Error()))
		}
		switch {
		case err == nil && sum == last:
		case sum == failed && time.Now().Before(next):
		default:
			if err == nil {
				err = a.apply(ctx, b)
			}
			if err == nil {
				last, failed, retry = sum, [32]byte{}, 0
				break
			}
			// the same content refused again: back off, say it once
			if sum == failed {
				retry = min(2*retry, a.maxRetry)
			} else {
				retry = a.interval
			}
			a.fail(err, sum != failed)
			failed, next = sum, time.Now().Add(retry)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// apply makes the document the desired state.
func (a *applyFile) apply(ctx context.Context, b []byte) error {
	a.at.SetToCurrentTime()
	var doc cube.Document
	if err := cube.DecodeInto("", b, &doc); err != nil {
		return err
	}
	t, err := doc.Topology()
	if err != nil {
		return err
	}
	changes, err := a.eng.Replace(ctx, t, false)
	if err != nil {
		return err
	}
	result := "unchanged"
	if len(changes) > 0 {
		result = "ok"
		detail, _ := json.Marshal(changes)
		a.log.Info("applied", "changes", len(changes), "detail", string(bytes.TrimSpace(detail)))
	}
	a.applied.WithLabelValues(result).Inc()
	a.ok.Set(1)
	a.lastSuccess.SetToCurrentTime()
	return nil
}

// fail records a refused file; logged only when the error is new (a retry
// of the same content does not fill the log).
func (a *applyFile) fail(err error, log bool) {
	// logged before it is counted: whoever sees the count can find the line
	if log {
		a.log.Error("not applied; the running state is unchanged", "err", err)
	}
	a.at.SetToCurrentTime()
	a.applied.WithLabelValues("error").Inc()
	a.ok.Set(0)
}
