package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	pcap "github.com/edgenf/edgenf/internal/capture"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	nfcapture "github.com/edgenf/edgenf/internal/nf/capture"
	"github.com/edgenf/edgenf/internal/nf/slicer"
	"github.com/edgenf/edgenf/internal/schema"
	"github.com/edgenf/edgenf/internal/tenant"
	"golang.org/x/sys/unix"
)

// CaptureRequest starts a capture (POST /v1/captures); the reply is the
// pcapng stream, until Count frames, Duration, or the client hangs up.
type CaptureRequest struct {
	// Point: "cube:port" or a Linux interface the caller may use.
	Point string `json:"point,omitempty" format:"peer" doc:"where to capture: cube:port, or a Linux interface the caller may use (one there is not: 404); give point or slice (both or neither: 400)"`
	// Slice: a slice's entry and exit, the slicer port leading into its
	// chain ("SLICER/SLICE", or "SLICE" if one slicer alone has it). A
	// tenant captures only its own slices.
	Slice string `json:"slice,omitempty" pattern:"^[A-Za-z0-9_.-]{1,64}(/[A-Za-z0-9_.-]{1,64})?$" doc:"where to capture: a slice's entry and exit (out: frames entering the slice's chain; in: frames leaving it), as SLICER/SLICE or SLICE when one slicer alone has it; a tenant names only its own slices (another's, or none: 404; a name in several slicers: 409)"`
	// Config: snap length, direction, filter and rate bound, as a capture
	// cube's settings.
	nfcapture.Config
	Count    int    `json:"count,omitempty" minimum:"0" doc:"stop after this many frames (0 or absent: no limit)"`
	Duration string `json:"duration,omitempty" doc:"stop after this long: a Go duration such as 10s or 2m (zero, or longer than 2562047h: 422)"`
}

// goDuration is the form of a Go duration with units: time.ParseDuration
// refuses one of this form only for its value (too long).
var goDuration = regexp.MustCompile(`^(([0-9]+|[0-9]*[.][0-9]+)(ns|us|µs|ms|s|m|h))+$`)

// RefineSchema: a duration has goDuration's form; a capture names a
// point or a slice.
func (*CaptureRequest) RefineSchema(s *Schema) {
	s.Properties["duration"].Pattern = goDuration.String()
	s.AnyOf = []*Schema{
		schema.Branch([]string{"point"}, map[string]*Schema{"slice": schema.Absent()}),
		schema.Branch([]string{"slice"}, map[string]*Schema{"point": schema.Absent()}),
	}
}

// captureCubeName is the name of the transparent cubes captures attach:
// tenant.CaptureCubes and 8 hex digits, after the cube prefix of a tenant that has
// one (its cubes' names start with it). The daemon removes those left by a
// previous run at start.
var captureCubeName = regexp.MustCompile(`capture-[0-9a-f]{8}$`)

// removeStaleCaptures deletes the capture cubes of captures that ended
// with the daemon: nobody reads their rings any more.
func removeStaleCaptures(s *Server) {
	var stale []string
	t := s.eng.Topology()
	for _, n := range t.CubeNames() {
		if c := t.Lookup(n); c.Type == nfcapture.Type.Name && captureCubeName.MatchString(n) {
			stale = append(stale, n)
		}
	}
	if len(stale) == 0 {
		return
	}
	s.eng.UpdateAs(context.Background(), tenant.Admin, func(t *cube.Topology, _ tenant.Scope) error {
		for _, n := range stale {
			t.Detach(n)
			if err := t.DeleteCube(n); err != nil {
				return err
			}
		}
		return nil
	})
}

// pointHook is the hook a transparent cube on point must run at: the
// hook of the cube that owns it or is peered with the interface (peerOf:
// the engine's index of t), else that of the cubes attached there, else
// TC (it sees both directions of an interface).
func pointHook(t *cube.Topology, point string, peerOf func(iface string) (string, bool)) datapath.Hook {
	ep, err := cube.ParseEndpoint(point)
	if err != nil {
		return datapath.TC
	}
	if ep.IsCube() {
		if c := t.Lookup(ep.Cube); c != nil {
			return c.Hook
		}
		return datapath.TC
	}
	if peer, ok := peerOf(ep.Iface); ok {
		if pe, err := cube.ParseEndpoint(peer); err == nil {
			if c := t.Lookup(pe.Cube); c != nil {
				return c.Hook
			}
		}
	}
	if list := t.Attachments[point]; len(list) > 0 {
		if c := t.Lookup(list[0]); c != nil {
			return c.Hook
		}
	}
	return datapath.TC
}

func (s *Server) capture(w http.ResponseWriter, r *http.Request) {
	var req CaptureRequest
	if err := decodeBody(r, &req); err != nil {
		fail(w, err)
		return
	}
	dur, err := req.check()
	if err != nil {
		fail(w, err)
		return
	}
	begun := time.Now()
	cfg := req.Config
	raw, _ := json.Marshal(cfg)
	var suffix [4]byte
	rand.Read(suffix[:])
	base := tenant.CaptureCubes + hex.EncodeToString(suffix[:])
	name := base
	id := identityOf(r)
	var hook datapath.Hook
	// A slice's point is a port of the administrator's slicer: the
	// tenant's right to it is its right to the slice, checked here, and
	// the capture cube (the tenant's) is put there and taken away with the
	// administrator's rights.
	actor := who(r)
	if req.Slice != "" {
		actor = tenant.Admin
	}
	point := req.Point
	chainEntry := false // a slice's point is its chain's entry (slicer.Point)
	// ... and what the engine checks of a tenant's change, its quotas of
	// cubes and attachments, is checked here for it.
	limits := tenant.Quota{}
	if req.Slice != "" && !id.admin {
		for _, q := range []string{tenant.Cubes, tenant.Attachments} {
			limits[q] = s.eng.Limit(who(r), q)
		}
	}
	err = s.eng.UpdateAs(r.Context(), actor, func(t *cube.Topology, sc tenant.Scope) error {
		name = base
		if req.Slice != "" {
			p, err := slicer.FindSlice(t, req.Slice, id.tenant)
			if err != nil {
				return err
			}
			point = p.String()
			chainEntry = p.IntoChain() == "in"
			if p.IntoChain() == "in" && (cfg.Direction == "in" || cfg.Direction == "out") {
				// a slice's out is what enters its chain: at a chain
				// entry, what arrives on it
				flipped := cfg
				flipped.Direction = map[string]string{"in": "out", "out": "in"}[cfg.Direction]
				raw, _ = json.Marshal(flipped)
			}
			if len(limits) > 0 {
				// what it holds, from the engine's index (t is still the
				// applied state: nothing is changed yet). Checked here,
				// inside the change and under the engine's lock, and taken
				// by the same change: two captures started at once cannot
				// both pass on one count.
				cubes, attached := s.eng.Holds(id.tenant)
				now := tenant.Usage{tenant.Cubes: int64(cubes), tenant.Attachments: int64(attached)}
				next := tenant.Usage{tenant.Cubes: now[tenant.Cubes] + 1, tenant.Attachments: now[tenant.Attachments] + 1}
				if err := tenant.Check(limits, now, next); err != nil {
					return err
				}
			}
		} else if err := sc.Ref(t, "point", point); err != nil {
			return err
		} else if sc.Record != nil && sc.Record.CubePrefix != "" {
			name = sc.Record.CubePrefix + name // a tenant's cubes bear its prefix
		}
		hook = pointHook(t, point, s.eng.PeerOf)
		c := &cube.Cube{Name: name, Type: nfcapture.Type.Name, Hook: hook, Config: raw}
		if !id.admin {
			c.Tenant = id.tenant
		}
		if err := t.AddCube(c); err != nil {
			return err
		}
		return t.Attach(name, point, "last")
	})
	if err != nil {
		fail(w, err)
		return
	}
	attached := time.Since(begun)
	defer s.eng.UpdateAs(context.Background(), actor, func(t *cube.Topology, _ tenant.Scope) error {
		t.Detach(name)
		return t.DeleteCube(name)
	})
	var rd *nfcapture.Reader
	if err := s.eng.WithHandle(who(r), name, func(h cube.Handle) (err error) {
		rd, err = nfcapture.Open(h)
		return err
	}); err != nil {
		fail(w, err)
		return
	}
	defer rd.Close()
	log := s.eng.Logger().With("capture", name, "point", point, "hook", hook)
	if req.Slice != "" {
		log = log.With("slice", req.Slice)
	}
	if !id.admin {
		log = log.With("tenant", id.tenant)
	}
	// what an operator waits for before the first frame can come: the
	// capture cube loaded (the verifier) and attached
	log.Info("capture started", "took", time.Since(begun).Round(time.Microsecond), "attached_after", attached.Round(time.Microsecond))
	defer func() {
		st, _ := rd.Stats()
		log.Info("capture ended", "lasted", time.Since(begun).Round(time.Millisecond), "seen", st.Seen, "matched", st.Matched, "captured", st.Captured, "dropped", st.RateDrop+st.RingDrop)
	}()
	s.streamCapture(w, r, rd, req, point, chainEntry, cfg, hook, dur)
}

// check checks a capture request on its own, before anything changes (the
// filter is compiled), and gives its duration (0: none).
func (req *CaptureRequest) check() (time.Duration, error) {
	switch {
	case req.Point == "" && req.Slice == "":
		return 0, cube.Errorf("point", "required: cube:port or a Linux interface (or slice)")
	case req.Point != "" && req.Slice != "":
		return 0, cube.Errorf("slice", "give point or slice, not both")
	}
	if req.Count < 0 {
		return 0, cube.Errorf("count", "count %d: give 1 or more frames, or 0 for no limit", req.Count)
	}
	var dur time.Duration
	if req.Duration != "" {
		if !goDuration.MatchString(req.Duration) {
			return 0, cube.Errorf("duration", "duration %q: give a positive Go duration such as 10s or 2m", req.Duration)
		}
		var err error
		if dur, err = time.ParseDuration(req.Duration); err != nil || dur <= 0 {
			return 0, cube.Unprocessable("duration", "duration %q: give a positive Go duration such as 10s or 2m, at most 2562047h", req.Duration)
		}
	}
	return dur, req.Config.Validate(nil)
}

// monoOffset is what to add to CLOCK_MONOTONIC nanoseconds (the kernel's
// bpf_ktime_get_ns) to get Unix time.
func monoOffset() int64 {
	var ts unix.Timespec
	now := time.Now()
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return now.UnixNano() - ts.Nano()
}

func (s *Server) streamCapture(w http.ResponseWriter, r *http.Request, rd *nfcapture.Reader, req CaptureRequest, point string, chainEntry bool, cfg nfcapture.Config, hook datapath.Hook, dur time.Duration) {
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a capture lasts as long as it is asked to
	w.Header().Set("Content-Type", "application/x-pcapng")
	w.WriteHeader(200)
	start := time.Now()
	dir := cfg.Direction
	if dir == "" {
		dir = "both"
	}
	rate := "no rate bound"
	if b := cfg.RateOf(); b > 0 {
		rate = fmt.Sprintf("at most %d frames/s per CPU", b)
	}
	name := req.Point
	if req.Slice != "" {
		name = "slice " + req.Slice
		// the frames' own direction flags are the point's: at a slicer
		// port out is into the chain, at a chain entry in is
		if chainEntry {
			dir += " (out: into the slice's chain, in: out of it; at the chain's entry the frames are marked the other way: inbound into the chain)"
		} else {
			dir += " (out: into the slice's chain, in: out of it)"
		}
	}
	desc := fmt.Sprintf("edgenf %s at %s, hook %s, direction %s, snap length %d, %s", name, point, hook, dir, cfg.SnaplenOf(), rate)
	if t := identityOf(r).tenant; t != "" {
		desc += ", tenant " + t
	}
	nw, err := pcap.NewNgWriter(w, "edgenf capture at "+name+" started "+start.UTC().Format(time.RFC3339Nano),
		[]pcap.Interface{{Name: name, Description: desc, Filter: cfg.Filter, Snaplen: cfg.SnaplenOf()}})
	if err != nil {
		return
	}
	flush := func() error {
		if err := nw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if flush() != nil {
		return
	}
	off := monoOffset()
	var end time.Time
	if dur > 0 {
		end = start.Add(dur)
	}
	delivered, pending, lastFlush := uint64(0), false, time.Now()
	ctx := r.Context()
	for ctx.Err() == nil && (req.Count == 0 || delivered < uint64(req.Count)) {
		now := time.Now()
		if !end.IsZero() && !now.Before(end) {
			break
		}
		wait := 200 * time.Millisecond
		if pending {
			wait = 20 * time.Millisecond
		}
		deadline := now.Add(wait)
		if !end.IsZero() && end.Before(deadline) {
			deadline = end
		}
		mono, p, err := rd.Next(deadline)
		if errors.Is(err, nfcapture.ErrTimeout) {
			if pending && flush() != nil {
				return
			}
			pending = false
			continue
		}
		if err != nil {
			break
		}
		p.Time = time.Unix(0, int64(mono)+off)
		if nw.WritePacket(p) != nil {
			return
		}
		delivered++
		pending = true
		if time.Since(lastFlush) > 20*time.Millisecond {
			if flush() != nil {
				return
			}
			pending, lastFlush = false, time.Now()
		}
	}
	st, _ := rd.Stats()
	st.Start, st.End, st.Delivered = start, time.Now(), delivered
	nw.WriteStats(0, st)
	flush()
}
