package p4rt

// SetForwardingPipelineConfig and GetForwardingPipelineConfig. The device
// config (p4_device_config) is the P4-16 source text of the program: the
// daemon compiles it and (re)programs the device's p4 cube, creating the
// cube (XDP, no ports) if it does not exist yet.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	p4nf "github.com/edgenf/edgenf/internal/nf/p4"
	p4c "github.com/edgenf/edgenf/internal/p4"
	"github.com/edgenf/edgenf/internal/tenant"
	"google.golang.org/grpc/codes"
)

// settingsFor returns the cube's settings with the program replaced
// (other settings — cpu_port, defines, learning rules — are kept as they
// are, byte for byte), as raw JSON, and the options to compile it.
func settingsFor(c *cube.Cube, dev *device, src []byte) (json.RawMessage, p4c.Options, error) {
	raw := map[string]json.RawMessage{}
	var set p4nf.Settings
	if c != nil && len(c.Config) > 0 {
		if err := json.Unmarshal(c.Config, &raw); err != nil {
			return nil, p4c.Options{}, err
		}
		json.Unmarshal(c.Config, &set)
	}
	if set.Program == "" {
		set.Program = fmt.Sprintf("p4rt-device-%d.p4", dev.id)
	}
	raw["program"], _ = json.Marshal(set.Program)
	raw["source"], _ = json.Marshal(string(src))
	out, err := json.Marshal(raw)
	set.Source = string(src)
	return out, p4nf.CompileOptions(&set), err
}

// SetForwardingPipelineConfig verifies, saves or commits a program.
func (s *Server) SetForwardingPipelineConfig(ctx context.Context, req *SetPipelineRequest) (*SetPipelineResponse, error) {
	d, who, err := s.access(ctx, req.DeviceID)
	if err != nil {
		return nil, err
	}
	if err := d.checkPrimary(req.Role, req.ElectionID); err != nil {
		return nil, err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	cfg := req.Config
	switch req.Action {
	case ActionVerify, ActionVerifyAndSave, ActionVerifyAndCommit, ActionReconcileAndCommit:
		if cfg == nil {
			return nil, errf(codes.InvalidArgument, "a config is required for this action")
		}
	case ActionCommit:
		if cfg != nil {
			return nil, errf(codes.InvalidArgument, "COMMIT takes no config: it commits the one saved by VERIFY_AND_SAVE")
		}
		d.mu.Lock()
		cfg = d.saved
		d.mu.Unlock()
		if cfg == nil {
			return nil, errf(codes.FailedPrecondition, "COMMIT: no config was saved (VERIFY_AND_SAVE)")
		}
	default:
		return nil, errf(codes.InvalidArgument, "action %d: want VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT, COMMIT or RECONCILE_AND_COMMIT", req.Action)
	}
	if len(cfg.DeviceConfig) == 0 {
		return nil, errf(codes.InvalidArgument, "p4_device_config is empty: it must hold the P4-16 source of the program")
	}
	if !utf8.Valid(cfg.DeviceConfig) {
		return nil, errf(codes.InvalidArgument, "p4_device_config is not text: edgenf takes the P4-16 source of the program (not a BMv2 JSON or a binary)")
	}
	cur, exists := s.eng.CubeHeader(who, d.cube)
	if exists && cur.Type != "p4" {
		return nil, errf(codes.FailedPrecondition, "device %d: cube %s is a %s cube, not a p4 cube", d.id, d.cube, cur.Type)
	}
	if !exists {
		cur = nil
	}
	conf, opts, err := settingsFor(cur, d, cfg.DeviceConfig)
	if err != nil {
		return nil, errf(codes.Internal, "cube %s: settings: %v", d.cube, err)
	}
	commit := req.Action == ActionVerifyAndCommit || req.Action == ActionCommit || req.Action == ActionReconcileAndCommit
	// commits compile again (with the eBPF objects) when the cube is
	// changed; the check here only needs the model
	opts.NoObject = commit
	cctx := ctx
	if limit := s.eng.Limit(who, tenant.CompileSeconds); limit >= 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, time.Duration(limit)*time.Second)
		defer cancel()
	}
	res, err := p4nf.Compile(cctx, opts) // in the daemon's compile slots, as a cube's
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, errf(codes.ResourceExhausted, "the compile did not finish within the tenant's limit (quota %s)", tenant.CompileSeconds)
		}
		return nil, errf(codes.InvalidArgument, "the program does not compile: %v", err)
	}
	if cfg.HasP4Info {
		if err := checkP4Info(cfg.P4Info, res.Info); err != nil {
			return nil, errf(codes.InvalidArgument, "%v", err)
		}
	}
	switch req.Action {
	case ActionVerify:
		return &SetPipelineResponse{}, nil
	case ActionVerifyAndSave:
		d.mu.Lock()
		c := *cfg
		d.saved = &c
		d.mu.Unlock()
		return &SetPipelineResponse{}, nil
	}
	clear := req.Action != ActionReconcileAndCommit // the forwarding state too
	err = s.eng.UpdateAs(ctx, who, func(t *cube.Topology, _ tenant.Scope) error {
		c := t.Lookup(d.cube)
		if c == nil {
			c = &cube.Cube{Name: d.cube, Type: "p4", Hook: datapath.XDP, Tenant: d.tenant, Config: conf}
			if err := t.AddCube(c); err != nil {
				return err
			}
		} else if !who.IsAdmin() && c.Tenant != d.tenant {
			return errf(codes.PermissionDenied, "device %d: its cube %s is not in the device's tenant; ask the administrator", d.id, d.cube)
		}
		st, err := p4nf.RuntimeState(c)
		if err != nil {
			return err
		}
		if clear {
			// VERIFY_AND_COMMIT: the forwarding state starts empty, and
			// with it the digests and the groups
			if c, err = t.Edit(d.cube); err != nil {
				return err
			}
			c.ClearTables()
			st = p4nf.P4RuntimeState{}
		}
		st.Cookie = nil
		if cfg.Cookie != nil {
			st.Cookie = &cfg.Cookie.Cookie
		}
		if err := p4nf.SetRuntimeState(t, d.cube, st); err != nil {
			return err
		}
		return t.SetConfig(d.cube, conf)
	})
	if err != nil {
		return nil, fromEngine(err)
	}
	d.mu.Lock()
	if req.Action == ActionCommit {
		d.saved = nil
	}
	if clear {
		d.digests = map[uint32]*DigestConfig{}
	}
	d.mu.Unlock()
	s.log.Info("p4rt: pipeline committed", "device", d.id, "cube", d.cube, "reconcile", !clear)
	return &SetPipelineResponse{}, nil
}

// GetForwardingPipelineConfig returns the device's P4Info, program source
// and cookie.
func (s *Server) GetForwardingPipelineConfig(ctx context.Context, req *GetPipelineRequest) (*GetPipelineResponse, error) {
	d, who, err := s.access(ctx, req.DeviceID)
	if err != nil {
		return nil, err
	}
	pl, err := s.pipeline(d, who)
	if err != nil {
		return nil, err
	}
	out := &PipelineConfig{}
	st, err := p4nf.RuntimeState(pl.cube)
	if err != nil {
		return nil, errf(codes.Internal, "cube %s: %v", pl.dev.cube, err)
	}
	if st.Cookie != nil {
		out.Cookie = &Cookie{Cookie: *st.Cookie}
	}
	addP4Info := func() error {
		b, err := pl.info.ProtoBinary()
		if err != nil {
			return errf(codes.Internal, "%v", err)
		}
		out.P4Info, out.HasP4Info = b, true
		return nil
	}
	switch req.ResponseType {
	case ResponseAll:
		if err := addP4Info(); err != nil {
			return nil, err
		}
		out.DeviceConfig = []byte(source(pl.cube))
	case ResponseCookieOnly:
	case ResponseP4InfoAndCookie:
		if err := addP4Info(); err != nil {
			return nil, err
		}
	case ResponseDeviceConfigAndCookie:
		out.DeviceConfig = []byte(source(pl.cube))
	default:
		return nil, errf(codes.InvalidArgument, "response type %d: want ALL, COOKIE_ONLY, P4INFO_AND_COOKIE or DEVICE_CONFIG_AND_COOKIE", req.ResponseType)
	}
	return &GetPipelineResponse{Config: out}, nil
}
