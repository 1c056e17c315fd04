// Package p4rt serves P4Runtime v1 (gRPC service p4.v1.P4Runtime) for the
// daemon's p4 cubes: each P4Runtime device id names one p4 cube. The
// messages are hand-written (messages.go, p4info.go) and marshalled with
// protowire by a gRPC codec of our own, so the package needs neither the
// p4runtime Go module nor generated code.
package p4rt

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/engine"
	"github.com/edgenf/edgenf/internal/p4/p4info"
	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/tlsauth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// APIVersion is the P4Runtime version served.
const APIVersion = "1.4.0"

// ServiceName is the gRPC service of P4Runtime.
const ServiceName = "p4.v1.P4Runtime"

// codec marshals the hand-written messages. It is forced on the server, so
// whatever content subtype a client sends ("proto" in practice) is read as
// protobuf by these types.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	m, ok := v.(marshaler)
	if !ok {
		return nil, fmt.Errorf("p4rt codec: cannot marshal %T", v)
	}
	return marshal(m), nil
}

func (codec) Unmarshal(b []byte, v any) error {
	m, ok := v.(unmarshaler)
	if !ok {
		return fmt.Errorf("p4rt codec: cannot unmarshal into %T", v)
	}
	return m.unmarshal(b)
}

func (codec) Name() string { return "proto" }

// Codec is the gRPC codec of the hand-written messages, for clients
// (grpc.ForceCodec(p4rt.Codec)).
var Codec = codec{}

// Config configures a server.
type Config struct {
	Engine *engine.Engine
	// Devices maps P4Runtime device ids to p4 cube names.
	Devices map[uint64]string
	// Tenants binds device ids to tenants: on the TLS server, a tenant
	// reaches only its devices; devices not listed are the
	// administrator's alone.
	Tenants map[uint64]string
	// Tokens looks bearer tokens up (nil: none accepted).
	Tokens func(token string) (tlsauth.Identity, bool)
	Logger *slog.Logger
}

// Server is a P4Runtime server over the engine's p4 cubes.
type Server struct {
	eng    *engine.Engine
	log    *slog.Logger
	tokens func(string) (tlsauth.Identity, bool)
	grpc   *grpc.Server // the unix socket's: root, no authentication
	tls    *grpc.Server // TCP: TLS, authenticated (auth.go)

	mu      sync.Mutex
	devices map[uint64]*device
	busy    inflight // auth.go: each tenant's calls in progress
}

// New returns a server; Serve starts it.
func New(cfg Config) *Server {
	s := &Server{eng: cfg.Engine, log: cfg.Logger, tokens: cfg.Tokens, devices: map[uint64]*device{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	for id, name := range cfg.Devices {
		d := newDevice(id, name)
		d.tenant = cfg.Tenants[id]
		if c, ok := s.eng.CubeHeader(tenant.Admin, name); ok {
			d.digests = loadDigests(c)
		}
		s.devices[id] = d
	}
	s.grpc = s.newGRPC(asAdmin)
	return s
}

func (s *Server) newGRPC(auth authenticator, opts ...grpc.ServerOption) *grpc.Server {
	g := grpc.NewServer(append(opts, grpc.ForceServerCodec(codec{}),
		grpc.UnaryInterceptor(unaryAuth(auth)), grpc.StreamInterceptor(streamAuth(auth)))...)
	g.RegisterService(&serviceDesc, s)
	return g
}

// Serve accepts P4Runtime connections on l until Stop, without TLS or
// authentication: every client is the administrator. Only for a listener
// only root can reach (the daemon's unix socket).
func (s *Server) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// ServeTLS accepts P4Runtime connections over TLS on l until Stop. Each
// call is authenticated (client certificate or bearer token) and reaches
// only the devices of its identity. Call it at most once.
func (s *Server) ServeTLS(l net.Listener, cfg *tls.Config, opts ...grpc.ServerOption) error {
	s.mu.Lock()
	s.tls = s.newGRPC(s.byCredentials, append(opts, grpc.Creds(credentials.NewTLS(cfg)), grpc.InTapHandle(s.admitCall))...)
	g := s.tls
	s.mu.Unlock()
	return g.Serve(l)
}

// Stop closes the listeners and every stream.
func (s *Server) Stop() {
	s.grpc.Stop()
	s.mu.Lock()
	tlsSrv := s.tls
	s.mu.Unlock()
	if tlsSrv != nil {
		tlsSrv.Stop()
	}
	s.mu.Lock()
	devs := make([]*device, 0, len(s.devices))
	for _, d := range s.devices {
		devs = append(devs, d)
	}
	s.mu.Unlock()
	for _, d := range devs {
		d.stopPoll(false)
	}
}

// ParseDevices parses "cube=id[@tenant],..." (the daemon's -p4rt-devices):
// device id → cube, and device id → tenant for the devices bound to one.
func ParseDevices(s string) (cubes, tenants map[uint64]string, err error) {
	cubes, tenants = map[uint64]string{}, map[uint64]string{}
	if strings.TrimSpace(s) == "" {
		return cubes, tenants, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		name, idText, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, nil, fmt.Errorf("p4rt device %q: want CUBE=ID or CUBE=ID@TENANT", part)
		}
		idText, tenant, bound := strings.Cut(idText, "@")
		if bound {
			if err := cube.CheckName("tenant", tenant); err != nil {
				return nil, nil, fmt.Errorf("p4rt device %q: %v", part, err)
			}
		}
		id, err := strconv.ParseUint(idText, 0, 64)
		if err != nil || id == 0 {
			return nil, nil, fmt.Errorf("p4rt device %q: the device id must be a number > 0", part)
		}
		if other, dup := cubes[id]; dup {
			return nil, nil, fmt.Errorf("p4rt device id %d given to both %s and %s", id, other, name)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("p4rt device %s listed twice", name)
		}
		seen[name] = true
		cubes[id] = name
		if bound {
			tenants[id] = tenant
		}
	}
	return cubes, tenants, nil
}

// --- errors ---

// errf is a gRPC status error.
func errf(c codes.Code, format string, args ...any) error {
	return status.Errorf(c, format, args...)
}

// fromEngine maps an engine or cube error to a gRPC status.
func fromEngine(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		return err
	}
	var fe *cube.FieldError
	switch {
	case errors.As(err, &fe) && strings.HasPrefix(fe.Field, "quota."):
		return errf(codes.ResourceExhausted, "%v", err)
	case errors.Is(err, cube.ErrForbidden):
		return errf(codes.PermissionDenied, "%v", err)
	case errors.Is(err, cube.ErrNotFound):
		return errf(codes.NotFound, "%v", err)
	case errors.Is(err, cube.ErrConflict):
		return errf(codes.AlreadyExists, "%v", err)
	case errors.Is(err, cube.ErrInvalid), errors.Is(err, cube.ErrUnprocessable):
		return errf(codes.InvalidArgument, "%v", err)
	}
	return errf(codes.Unknown, "%v", err)
}

// --- devices and pipelines ---

// pipeline is a device's cube as it is now, for a call acting as who.
type pipeline struct {
	dev  *device
	who  tenant.Actor
	cube *cube.Cube // header: no tables
	info *p4info.P4Info
}

// device looks a device id up.
func (s *Server) device(id uint64) (*device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[id]
	if !ok {
		var known []string
		for id, d := range s.devices {
			known = append(known, fmt.Sprintf("%d (%s)", id, d.cube))
		}
		sort.Strings(known)
		if len(known) == 0 {
			known = []string{"none: start edgenfd with -p4rt-devices CUBE=ID"}
		}
		return nil, errf(codes.NotFound, "device id %d is not served (devices: %s)", id, strings.Join(known, ", "))
	}
	return d, nil
}

// pipeline returns the device's cube and compiled model as who sees them,
// or FAILED_PRECONDITION when the device has no pipeline yet.
func (s *Server) pipeline(d *device, who tenant.Actor) (*pipeline, error) {
	id := d.id
	c, ok := s.eng.CubeHeader(who, d.cube)
	if !ok {
		return nil, s.notTheTenants(d, who, errf(codes.FailedPrecondition,
			"device %d has no forwarding pipeline config: cube %s does not exist (SetForwardingPipelineConfig creates it)", id, d.cube))
	}
	if c.Type != "p4" {
		return nil, errf(codes.FailedPrecondition, "device %d: cube %s is a %s cube, not a p4 cube", id, d.cube, c.Type)
	}
	v, err := s.eng.View(who, d.cube, "p4info")
	if err != nil {
		return nil, errf(codes.FailedPrecondition, "device %d: cube %s has no program: %v", id, d.cube, err)
	}
	info, ok := v.(*p4info.P4Info)
	if !ok || info.Edgenf == nil {
		return nil, errf(codes.Internal, "device %d: cube %s: unexpected model %T", id, d.cube, v)
	}
	return &pipeline{dev: d, who: who, cube: c, info: info}, nil
}

// checkPrimary refuses a change from a client that is not the primary of
// the device (PERMISSION_DENIED).
func (d *device) checkPrimary(role string, election *Uint128) error {
	if role != "" {
		return errf(codes.Unimplemented, "roles are not supported (role %q); use the default role", role)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.primaryLocked()
	if p == nil {
		return errf(codes.PermissionDenied, "device %d has no primary client: open a StreamChannel and send a MasterArbitrationUpdate first", d.id)
	}
	if election == nil || *election != *p.election {
		got := "none"
		if election != nil {
			got = election.String()
		}
		return errf(codes.PermissionDenied, "election id %s is not the primary's (%s) for device %d", got, p.election, d.id)
	}
	return nil
}

// source returns the P4 source held in a cube's config.
func source(c *cube.Cube) string {
	var s struct {
		Source string `json:"source"`
	}
	json.Unmarshal(c.Config, &s)
	return s.Source
}

// --- Capabilities ---

// Capabilities answers the API version.
func (s *Server) Capabilities(ctx context.Context, _ *CapabilitiesRequest) (*CapabilitiesResponse, error) {
	return &CapabilitiesResponse{Version: APIVersion}, nil
}

// --- service description ---

// p4Runtime is what the service description needs of the server.
type p4Runtime interface {
	Write(context.Context, *WriteRequest) (*WriteResponse, error)
	Capabilities(context.Context, *CapabilitiesRequest) (*CapabilitiesResponse, error)
}

func unary[Req any, Resp any](name string, call func(*Server, context.Context, *Req) (*Resp, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(Req)
			if err := dec(in); err != nil {
				return nil, err
			}
			if interceptor == nil {
				return call(srv.(*Server), ctx, in)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + ServiceName + "/" + name}
			return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
				return call(srv.(*Server), ctx, req.(*Req))
			})
		},
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: ServiceName,
	HandlerType: (*p4Runtime)(nil),
	Methods: []grpc.MethodDesc{
		unary("Write", (*Server).Write),
		unary("SetForwardingPipelineConfig", (*Server).SetForwardingPipelineConfig),
		unary("GetForwardingPipelineConfig", (*Server).GetForwardingPipelineConfig),
		unary("Capabilities", (*Server).Capabilities),
	},
	Streams: []grpc.StreamDesc{
		{StreamName: "Read", ServerStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			in := &ReadRequest{}
			if err := st.RecvMsg(in); err != nil {
				return err
			}
			return srv.(*Server).Read(st.Context(), in, func(r *ReadResponse) error { return st.SendMsg(r) })
		}},
		{StreamName: "StreamChannel", ServerStreams: true, ClientStreams: true, Handler: func(srv any, st grpc.ServerStream) error {
			return srv.(*Server).streamChannel(st)
		}},
	},
	Metadata: "p4/v1/p4runtime.proto",
}
