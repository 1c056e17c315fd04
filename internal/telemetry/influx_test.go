package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// line is one decoded line of line protocol.
type line struct {
	measurement string
	tags        map[string]string
	fields      map[string]float64
	kinds       map[string]lineprotocol.ValueKind
	time        time.Time
}

func decodeLines(t *testing.T, body []byte) []line {
	t.Helper()
	var out []line
	dec := lineprotocol.NewDecoderWithBytes(body)
	for dec.Next() {
		m, err := dec.Measurement()
		if err != nil {
			t.Fatal(err)
		}
		l := line{measurement: string(m), tags: map[string]string{}, fields: map[string]float64{}, kinds: map[string]lineprotocol.ValueKind{}}
		for {
			k, v, err := dec.NextTag()
			if err != nil {
				t.Fatal(err)
			}
			if k == nil {
				break
			}
			l.tags[string(k)] = string(v)
		}
		for {
			k, v, err := dec.NextField()
			if err != nil {
				t.Fatal(err)
			}
			if k == nil {
				break
			}
			l.kinds[string(k)] = v.Kind()
			switch v.Kind() {
			case lineprotocol.Int:
				l.fields[string(k)] = float64(v.IntV())
			case lineprotocol.Float:
				l.fields[string(k)] = v.FloatV()
			default:
				t.Fatalf("field %s is %v", k, v.Kind())
			}
		}
		if l.time, err = dec.Time(lineprotocol.Millisecond, time.Time{}); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInfluxLinesCarryEveryPrometheusSeries: what the exporter writes for
// an engine's counters is, series for series, what a scrape has: each
// Prometheus series edgenf_<subsystem>_<name>{labels} is the field <name>
// of measurement edgenf_<subsystem> with the non-empty labels as tags, at
// the same value.
func TestInfluxLinesCarryEveryPrometheusSeries(t *testing.T) {
	eng := chainWithFrame(t)
	points := Gather(eng, tenant.Admin)
	stamp := time.UnixMilli(1_700_000_000_123)
	batches, err := encodeLines(points, stamp, 3) // several batches
	if err != nil {
		t.Fatal(err)
	}
	influx := map[string]float64{} // measurement,tags field → value
	nLines := 0
	for _, b := range batches {
		ls := decodeLines(t, gunzip(t, b.body))
		if len(ls) != b.lines || b.lines > 3 {
			t.Fatalf("batch of %d lines says %d (max 3)", len(ls), b.lines)
		}
		for _, l := range ls {
			if !l.time.Equal(stamp) {
				t.Errorf("%s stamped %v, want %v", l.measurement, l.time, stamp)
			}
			for f, v := range l.fields {
				if l.kinds[f] != lineprotocol.Int {
					t.Errorf("%s %s is %v: the kernel's counters are integers", l.measurement, f, l.kinds[f])
				}
				influx[seriesKey(l.measurement, l.tags, f)] = v
			}
		}
		nLines += len(ls)
	}
	if nLines != len(points) {
		t.Errorf("%d lines for %d points", nLines, len(points))
	}
	families, err := scraper(eng, tenant.Admin).Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			tags := map[string]string{}
			for _, l := range m.GetLabel() {
				if l.GetValue() != "" {
					tags[l.GetName()] = l.GetValue()
				}
			}
			meas, field := splitName(f.GetName())
			want := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			got, ok := influx[seriesKey(meas, tags, field)]
			if !ok || got != want {
				t.Errorf("%s%v = %v in Prometheus; in InfluxDB: %v (present: %v)", f.GetName(), tags, want, got, ok)
			}
			n++
		}
	}
	if n != len(influx) {
		t.Errorf("%d Prometheus series, %d InfluxDB fields", n, len(influx))
	}
}

// splitName maps a Prometheus name to measurement and field by the
// families' rule.
func splitName(name string) (string, string) {
	for _, f := range []*Family{PortReceivePackets, PortReceiveBytes, PortTransmitPackets, PortTransmitBytes, PortDropPackets,
		PortDropBytes, PortPuntPackets, PortPuntRateDrops, CubeUp, CubeSlowCopies, Cubes, CopyStale, CopyFailed, StartCubes, StartMapsReset, StartSharedReset, StartIfacesAdopted} {
		if f.FullName() == name {
			return f.Measurement(), f.Name
		}
	}
	return "?", name
}

func seriesKey(measurement string, tags map[string]string, field string) string {
	return fmt.Sprintf("%s %v %s", measurement, tags, field)
}

// fakeInflux records the writes it takes; fail(n) answers the next n
// writes with a status.
type fakeInflux struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
	failWith []int
}

func (f *fakeInflux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failWith) > 0 {
		code := f.failWith[0]
		f.failWith = f.failWith[1:]
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":"status %d as the test asked"}`, code)
		return
	}
	f.requests = append(f.requests, r)
	f.bodies = append(f.bodies, body)
	w.WriteHeader(204)
}

func (f *fakeInflux) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// counterPoints makes n points of one family, values 0..n-1.
func counterPoints(n int) func() []Point {
	return func() []Point {
		ps := make([]Point, n)
		for i := range ps {
			ps[i] = Point{Labels: []Label{{LabelCube, fmt.Sprintf("c%d", i)}, {LabelTenant, ""}}, Samples: []Sample{{Family: CubeSlowCopies, Value: uint64(i)}}}
		}
		return ps
	}
}

// TestInfluxWritesV1AndV2: the exporter posts gzipped line protocol with
// millisecond stamps to /write?db= (InfluxDB 1.x, basic authentication)
// or /api/v2/write?org=&bucket= (2.x, a token), under the URL's path.
func TestInfluxWritesV1AndV2(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       InfluxConfig
		path      string
		query     string
		authorize func(*http.Request) bool
	}{
		{"v1", InfluxConfig{Database: "edge", Token: "ops:s3cret"}, "/prefix/write", "db=edge&precision=ms",
			func(r *http.Request) bool { u, p, ok := r.BasicAuth(); return ok && u == "ops" && p == "s3cret" }},
		{"v2", InfluxConfig{Org: "acme", Bucket: "edge", Token: "tok-123"}, "/prefix/api/v2/write", "bucket=edge&org=acme&precision=ms",
			func(r *http.Request) bool { return r.Header.Get("Authorization") == "Token tok-123" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeInflux{}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			cfg := tc.cfg
			cfg.URL, cfg.Interval = srv.URL+"/prefix", time.Hour
			x, err := NewInflux(cfg, counterPoints(3))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { x.Run(ctx); close(done) }()
			waitFor(t, func() bool { return fake.writes() == 1 })
			cancel()
			<-done
			r := fake.requests[0]
			if r.Method != "POST" || r.URL.Path != tc.path || r.URL.RawQuery != tc.query || r.Header.Get("Content-Encoding") != "gzip" || !tc.authorize(r) {
				t.Fatalf("request %s %s?%s, encoding %q, authorization %q", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Encoding"), r.Header.Get("Authorization"))
			}
			ls := decodeLines(t, gunzip(t, fake.bodies[0]))
			if len(ls) != 3 || ls[2].measurement != "edgenf_cube" || ls[2].tags["cube"] != "c2" || ls[2].fields["slow_copies_total"] != 2 {
				t.Fatalf("lines: %+v", ls)
			}
			if _, has := ls[0].tags["tenant"]; has {
				t.Errorf("an empty label became a tag: %+v", ls[0])
			}
			if v := testutil.ToFloat64(x.written); v != 3 {
				t.Errorf("points written: %v", v)
			}
		})
	}
}

// TestInfluxRetriesKeepingOrder: writes InfluxDB could not take (503, 404
// for a database not created yet) are retried, and the points reach it in
// the order they were gathered; points it refuses (400) are dropped and
// counted, not retried.
func TestInfluxRetriesKeepingOrder(t *testing.T) {
	fake := &fakeInflux{failWith: []int{503, 404}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	x, err := NewInflux(InfluxConfig{URL: srv.URL, Database: "edge", Interval: time.Hour}, counterPoints(2))
	if err != nil {
		t.Fatal(err)
	}
	// three gatherings queued before the sender runs
	for i := range 3 {
		x.collectOnce(time.UnixMilli(int64(1000 * (i + 1))))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go x.sendLoop(ctx, false)
	waitFor(t, func() bool { return fake.writes() == 3 })
	for i, b := range fake.bodies {
		ls := decodeLines(t, gunzip(t, b))
		if len(ls) != 2 || ls[0].time.UnixMilli() != int64(1000*(i+1)) {
			t.Fatalf("write %d: %+v", i, ls)
		}
	}
	if v := testutil.ToFloat64(x.failures); v != 2 {
		t.Errorf("failures: %v, want 2", v)
	}
	fake.mu.Lock()
	fake.failWith = []int{400}
	fake.mu.Unlock()
	x.collectOnce(time.UnixMilli(5000))
	x.collectOnce(time.UnixMilli(6000))
	waitFor(t, func() bool { return fake.writes() == 4 })
	if ls := decodeLines(t, gunzip(t, fake.bodies[3])); ls[0].time.UnixMilli() != 6000 {
		t.Errorf("after a refused batch, wrote %+v", ls)
	}
	if v := testutil.ToFloat64(x.dropped.WithLabelValues("rejected")); v != 2 {
		t.Errorf("points dropped as rejected: %v, want 2", v)
	}
}

// TestInfluxBufferIsBounded: while InfluxDB is unreachable the queue never
// holds more than MaxBuffer; the oldest points go first and are counted.
func TestInfluxBufferIsBounded(t *testing.T) {
	x, err := NewInflux(InfluxConfig{URL: "http://127.0.0.1:1", Database: "edge", MaxBuffer: 64 << 10, BatchLines: 100}, counterPoints(1000))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		x.collectOnce(time.UnixMilli(int64(i)))
		if x.queued > 64<<10 {
			t.Fatalf("%d bytes queued after %d gatherings, max %d", x.queued, i+1, 64<<10)
		}
	}
	dropped := testutil.ToFloat64(x.dropped.WithLabelValues("buffer_full"))
	queuedLines := 0
	for _, b := range x.queue {
		queuedLines += b.lines
	}
	if dropped == 0 || int(dropped)+queuedLines != 40*1000 {
		t.Fatalf("dropped %v + queued %d != gathered %d", dropped, queuedLines, 40*1000)
	}
	if ls := decodeLines(t, gunzip(t, x.queue[len(x.queue)-1].body)); ls[0].time.UnixMilli() != 39 {
		t.Errorf("the newest points were not kept: %v", ls[0].time)
	}
}

func TestInfluxConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  InfluxConfig
		want string
	}{
		{InfluxConfig{URL: "127.0.0.1:8086", Database: "d"}, "want http(s)://host:port"},
		{InfluxConfig{URL: "ftp://h:1", Database: "d"}, "want http(s)://host:port"},
		{InfluxConfig{URL: "http://h:1"}, "name a database"},
		{InfluxConfig{URL: "http://h:1", Database: "d", Bucket: "b"}, "not both"},
		{InfluxConfig{URL: "http://h:1", Bucket: "b"}, "needs an organisation and a bucket"},
		{InfluxConfig{URL: "http://h:1", Database: "d", Token: "secret"}, "user:password"},
		{InfluxConfig{URL: "http://h:1", Database: "d", Interval: time.Millisecond}, "at least 1s"},
	} {
		_, err := NewInflux(tc.cfg, counterPoints(1))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}
