package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/prometheus/client_golang/prometheus"
)

// InfluxConfig configures the export to InfluxDB: version 1 (Database: the
// /write endpoint) or version 2 (Org and Bucket: /api/v2/write, which
// InfluxDB 1.8+ also serves).
type InfluxConfig struct {
	URL         string // http(s)://host:port, with a path prefix if behind a proxy
	Database    string // InfluxDB 1.x database
	Org, Bucket string // InfluxDB 2.x organisation and bucket
	// Token: InfluxDB 2.x's API token; for 1.x, optional "user:password".
	Token    string
	Interval time.Duration // between two gatherings (default 10s)
	// MaxBuffer bounds the gzipped line protocol kept while InfluxDB does
	// not take it (default 32 MiB); past it the oldest batches are dropped.
	MaxBuffer  int
	BatchLines int           // lines per request (default 5000)
	Timeout    time.Duration // per request (default 10s)
	Client     *http.Client
	Logger     *slog.Logger
}

// Influx pushes every series Prometheus gets to InfluxDB as line protocol,
// one point per port (its seven counters as fields) or cube per interval.
// Gathering and sending run apart: a slow or absent InfluxDB delays nothing
// but its own writes, and what waits for it is bounded by MaxBuffer.
type Influx struct {
	cfg      InfluxConfig
	writeURL string
	gather   func() []Point

	mu     sync.Mutex
	queue  []*influxBatch
	queued int // bytes in queue
	wake   chan struct{}

	written, failures prometheus.Counter
	dropped           *prometheus.CounterVec
	buffered          prometheus.GaugeFunc
}

type influxBatch struct {
	body  []byte // gzipped line protocol
	lines int
}

// NewInflux checks cfg and builds an exporter of what gather returns.
func NewInflux(cfg InfluxConfig, gather func() []Point) (*Influx, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("influx URL %q: want http(s)://host:port", cfg.URL)
	}
	v1 := cfg.Database != ""
	v2 := cfg.Org != "" || cfg.Bucket != ""
	q := url.Values{"precision": {"ms"}}
	switch {
	case v1 && v2:
		return nil, errors.New("influx: a database (InfluxDB 1.x) or an organisation and a bucket (2.x), not both")
	case v1:
		u = u.JoinPath("write")
		q.Set("db", cfg.Database)
		if cfg.Token != "" && !strings.Contains(cfg.Token, ":") {
			return nil, errors.New("influx: the credentials of InfluxDB 1.x are user:password")
		}
	case v2:
		if cfg.Org == "" || cfg.Bucket == "" {
			return nil, errors.New("influx: InfluxDB 2.x needs an organisation and a bucket")
		}
		u = u.JoinPath("api", "v2", "write")
		q.Set("org", cfg.Org)
		q.Set("bucket", cfg.Bucket)
	default:
		return nil, errors.New("influx: name a database (InfluxDB 1.x) or an organisation and a bucket (2.x)")
	}
	u.RawQuery = q.Encode()
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Interval < time.Second {
		return nil, fmt.Errorf("influx interval %v: at least 1s", cfg.Interval)
	}
	if cfg.MaxBuffer == 0 {
		cfg.MaxBuffer = 32 << 20
	}
	if cfg.BatchLines == 0 {
		cfg.BatchLines = 5000
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	x := &Influx{cfg: cfg, writeURL: u.String(), gather: gather, wake: make(chan struct{}, 1),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgenf_influx_points_written_total",
			Help: "Points InfluxDB accepted."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "edgenf_influx_write_failures_total",
			Help: "Writes to InfluxDB that failed (each is retried, or its points are dropped as rejected)."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgenf_influx_points_dropped_total",
			Help: "Points never written: buffer_full (InfluxDB did not take them in time), rejected (InfluxDB refused them)."}, []string{"reason"}),
	}
	x.buffered = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "edgenf_influx_buffer_bytes",
		Help: "Gzipped line protocol waiting for InfluxDB."}, func() float64 {
		x.mu.Lock()
		defer x.mu.Unlock()
		return float64(x.queued)
	})
	for _, r := range []string{"buffer_full", "rejected"} {
		x.dropped.WithLabelValues(r)
	}
	return x, nil
}

// Describe implements prometheus.Collector: the exporter's own counters.
func (x *Influx) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range x.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (x *Influx) Collect(ch chan<- prometheus.Metric) {
	for _, c := range x.collectors() {
		c.Collect(ch)
	}
}

func (x *Influx) collectors() []prometheus.Collector {
	return []prometheus.Collector{x.written, x.failures, x.dropped, x.buffered}
}

// Run gathers every interval and sends until ctx ends, then tries for one
// more request timeout to send what is still buffered.
func (x *Influx) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		x.sendLoop(ctx, false)
	}()
	t := time.NewTicker(x.cfg.Interval)
	defer t.Stop()
	for {
		x.collectOnce(time.Now())
		select {
		case <-ctx.Done():
			<-done
			flush, cancel := context.WithTimeout(context.Background(), x.cfg.Timeout)
			defer cancel()
			x.sendLoop(flush, true)
			return
		case <-t.C:
		}
	}
}

// collectOnce gathers the series, encodes them stamped at now, and queues
// them for sending.
func (x *Influx) collectOnce(now time.Time) {
	batches, err := encodeLines(x.gather(), now, x.cfg.BatchLines)
	if err != nil {
		x.cfg.Logger.Error("influx: encoding line protocol", "err", err)
		return
	}
	x.mu.Lock()
	for _, b := range batches {
		x.queue = append(x.queue, b)
		x.queued += len(b.body)
	}
	for x.queued > x.cfg.MaxBuffer && len(x.queue) > 0 {
		old := x.queue[0]
		x.queue[0] = nil // its body is garbage now, not kept by the array
		x.queue = x.queue[1:]
		x.queued -= len(old.body)
		x.dropped.WithLabelValues("buffer_full").Add(float64(old.lines))
	}
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// sendLoop sends the queued batches, oldest first, until ctx ends or, when
// draining, the queue is empty. A batch InfluxDB refuses is dropped; one it
// could not take is retried with a backoff.
func (x *Influx) sendLoop(ctx context.Context, drain bool) {
	backoff := time.Duration(0)
	failing := false
	for {
		x.mu.Lock()
		var b *influxBatch
		if len(x.queue) > 0 {
			b = x.queue[0]
		}
		x.mu.Unlock()
		if b == nil {
			if drain {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-x.wake:
				continue
			}
		}
		err := x.send(ctx, b)
		var rej *rejectedError
		switch {
		case err == nil:
			x.written.Add(float64(b.lines))
			if failing {
				x.cfg.Logger.Info("influx: writing again", "url", x.writeURL)
				failing = false
			}
			backoff = 0
			x.pop(b)
		case errors.As(err, &rej):
			x.failures.Inc()
			x.dropped.WithLabelValues("rejected").Add(float64(b.lines))
			x.cfg.Logger.Error("influx: points refused, dropped", "points", b.lines, "err", err)
			x.pop(b)
		default:
			if ctx.Err() != nil {
				return
			}
			x.failures.Inc()
			if !failing {
				x.cfg.Logger.Warn("influx: write failed; retrying, keeping the points meanwhile", "url", x.writeURL, "err", err,
					"max_buffer_bytes", x.cfg.MaxBuffer)
				failing = true
			}
			backoff = min(max(2*backoff, time.Second), max(x.cfg.Interval, 30*time.Second))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
	}
}

// pop removes b from the head of the queue (unless dropped meanwhile).
func (x *Influx) pop(b *influxBatch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.queue) > 0 && x.queue[0] == b {
		x.queue[0] = nil
		x.queue = x.queue[1:]
		x.queued -= len(b.body)
	}
}

// rejectedError is InfluxDB refusing the points themselves: sending them
// again cannot succeed.
type rejectedError struct{ msg string }

func (e *rejectedError) Error() string { return e.msg }

func (x *Influx) send(ctx context.Context, b *influxBatch) error {
	ctx, cancel := context.WithTimeout(ctx, x.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", x.writeURL, bytes.NewReader(b.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("User-Agent", "edgenfd")
	switch {
	case x.cfg.Token == "":
	case x.cfg.Database != "":
		user, pass, _ := strings.Cut(x.cfg.Token, ":")
		req.SetBasicAuth(user, pass)
	default:
		req.Header.Set("Authorization", "Token "+x.cfg.Token)
	}
	resp, err := x.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	msg := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, influxMessage(resp.Body))
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return &rejectedError{msg}
	}
	// 401/403/404 (credentials, permissions, a database not created yet)
	// are retried like 429 and 5xx: the operator can fix them in InfluxDB
	// while the points wait
	return errors.New(msg)
}

// influxMessage extracts the error of an InfluxDB answer: {"error": ...}
// (1.x) or {"message": ...} (2.x).
func influxMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	var e struct{ Error, Message string }
	if json.Unmarshal(b, &e) == nil && (e.Error != "" || e.Message != "") {
		return e.Error + e.Message
	}
	return strings.TrimSpace(string(b))
}

// fieldValue is a sample as an InfluxDB field: the kernel's counts as
// integers, an NF type's own metrics as floats (NaN and ±Inf, which line
// protocol cannot carry, are left out).
func fieldValue(s Sample) (lineprotocol.Value, bool) {
	if s.Family.Float {
		return lineprotocol.FloatValue(s.Float)
	}
	return lineprotocol.IntValue(int64(min(s.Value, math.MaxInt64))), true
}

// histogramFields are a histogram's fields: <name>_count, _sum, and the
// cumulative count of each bucket, <name>_le_<bound>.
func histogramFields(fields []lineprotocol.Value, names []string, name string, h *cube.Histogram) ([]lineprotocol.Value, []string) {
	fields = append(fields, lineprotocol.IntValue(int64(min(h.Count, math.MaxInt64))))
	names = append(names, name+"_count")
	if v, ok := lineprotocol.FloatValue(h.Sum); ok {
		fields, names = append(fields, v), append(names, name+"_sum")
	}
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			fields = append(fields, lineprotocol.IntValue(int64(min(h.Counts[i], math.MaxInt64))))
			names = append(names, name+"_le_"+strconv.FormatFloat(b, 'g', -1, 64))
		}
	}
	return fields, names
}

// encodeLines encodes points as line protocol stamped at t, in gzipped
// batches of at most n lines. Samples of one point make one line (their
// families share a measurement); empty labels are left out (InfluxDB
// refuses empty tags).
func encodeLines(points []Point, t time.Time, n int) ([]*influxBatch, error) {
	var out []*influxBatch
	var enc lineprotocol.Encoder
	enc.SetPrecision(lineprotocol.Millisecond)
	lines := 0
	finish := func() error {
		if lines == 0 {
			return nil
		}
		if err := enc.Err(); err != nil {
			return err
		}
		var z bytes.Buffer
		gz, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
		gz.Write(enc.Bytes())
		if err := gz.Close(); err != nil {
			return err
		}
		out = append(out, &influxBatch{body: z.Bytes(), lines: lines})
		enc.Reset()
		lines = 0
		return nil
	}
	for _, p := range points {
		for i := 0; i < len(p.Samples); {
			m := p.Samples[i].Family.Measurement()
			var fields []lineprotocol.Value
			var names []string
			for ; i < len(p.Samples) && p.Samples[i].Family.Measurement() == m; i++ {
				if h := p.Samples[i].Hist; p.Samples[i].Family.Histogram && h != nil {
					fields, names = histogramFields(fields, names, p.Samples[i].Family.Name, h)
				} else if v, ok := fieldValue(p.Samples[i]); ok {
					fields, names = append(fields, v), append(names, p.Samples[i].Family.Name)
				}
			}
			if len(fields) == 0 {
				continue
			}
			enc.StartLine(m)
			for _, l := range p.Labels {
				if l.Value != "" {
					enc.AddTag(l.Name, l.Value)
				}
			}
			for k, v := range fields {
				enc.AddField(names[k], v)
			}
			enc.EndLine(t)
			if lines++; lines == n {
				if err := finish(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}
