package p4rt

// Who may use which device. The plain server (Serve) is for the daemon's
// root-only unix socket: its clients are the administrator. The TLS server
// (ServeTLS) authenticates every call by the client's certificate or a
// bearer token in the call's metadata ("authorization: Bearer TOKEN", the
// tokens of the REST API), and each device is bound to a tenant: a tenant
// reaches only the devices bound to it, and only while their cube is its.

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/edgenf/edgenf/internal/tenant"
	"github.com/edgenf/edgenf/internal/tlsauth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/tap"
)

type identityKey struct{}

// callerOf is the identity the server's interceptor put in a call's context.
func callerOf(ctx context.Context) (tlsauth.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(tlsauth.Identity)
	return id, ok
}

// authenticator returns the identity of a call.
type authenticator func(ctx context.Context) (tlsauth.Identity, error)

// asAdmin is the plain server's: the unix socket is root's.
func asAdmin(context.Context) (tlsauth.Identity, error) { return tlsauth.Identity{Admin: true}, nil }

// byCredentials authenticates a call on the TLS server: a verified client
// certificate, or a bearer token; both given must agree.
func (s *Server) byCredentials(ctx context.Context) (tlsauth.Identity, error) {
	var state *tls.ConnectionState
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			state = &ti.State
		}
	}
	cert, hasCert, err := tlsauth.FromConnection(state)
	if err != nil {
		return tlsauth.Identity{}, errf(codes.Unauthenticated, "%v", err)
	}
	var tok string
	hasTok := false
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for _, v := range md.Get("authorization") {
			if t, ok := strings.CutPrefix(v, "Bearer "); ok {
				tok, hasTok = t, true
			}
		}
	}
	var tokID tlsauth.Identity
	if hasTok {
		known := false
		if s.tokens != nil {
			tokID, known = s.tokens(tok)
		}
		if !known {
			return tlsauth.Identity{}, errf(codes.Unauthenticated, "invalid token")
		}
	}
	switch {
	case hasCert && hasTok && cert != tokID:
		return tlsauth.Identity{}, errf(codes.Unauthenticated, "the bearer token and the client certificate name different identities")
	case hasCert:
		return cert, nil
	case hasTok:
		return tokID, nil
	}
	return tlsauth.Identity{}, errf(codes.Unauthenticated, "no credentials: present a client certificate or the metadata \"authorization: Bearer TOKEN\"")
}

// inflight counts each tenant's calls in progress on the TLS server.
type inflight struct {
	mu sync.Mutex
	n  map[string]int64
}

// admitCall runs when a call's headers arrive, before its message is read:
// a tenant has at most its concurrent_requests quota of calls in progress
// (streams included) on the TLS server, as on the REST API, so that it
// cannot hold the daemon's memory with many calls of the largest message
// at once, or queue work without bound. A call over the limit is refused
// with RESOURCE_EXHAUSTED; the count drops when the call's stream ends,
// however it ends. Credentials are checked again by the interceptors.
func (s *Server) admitCall(ctx context.Context, _ *tap.Info) (context.Context, error) {
	id, err := s.byCredentials(ctx)
	if err != nil || id.Admin {
		return ctx, nil // the interceptor refuses it, or the administrator
	}
	max := s.eng.Limit(tenant.Of(id.Tenant), tenant.ConcurrentRequests)
	s.busy.mu.Lock()
	defer s.busy.mu.Unlock()
	if s.busy.n == nil {
		s.busy.n = map[string]int64{}
	}
	if n := s.busy.n[id.Tenant]; n >= max {
		return nil, errf(codes.ResourceExhausted, "over quota %s: limit %d, in use %d (P4Runtime calls and streams in progress)", tenant.ConcurrentRequests, max, n)
	}
	s.busy.n[id.Tenant]++
	context.AfterFunc(ctx, func() {
		s.busy.mu.Lock()
		s.busy.n[id.Tenant]--
		s.busy.mu.Unlock()
	})
	return ctx, nil
}

func unaryAuth(auth authenticator) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		id, err := auth(ctx)
		if err != nil {
			return nil, err
		}
		return h(context.WithValue(ctx, identityKey{}, id), req)
	}
}

func streamAuth(auth authenticator) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		id, err := auth(ss.Context())
		if err != nil {
			return err
		}
		return h(srv, &identifiedStream{ss, context.WithValue(ss.Context(), identityKey{}, id)})
	}
}

type identifiedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identifiedStream) Context() context.Context { return s.ctx }

// access returns the device id names if the caller may use it, and who the
// call acts as in the engine. A tenant is told about its own devices only,
// as if the others did not exist. That the device's cube is the tenant's is
// not checked here: the engine checks it under its lock, in each call made
// as the tenant (see actor).
func (s *Server) access(ctx context.Context, id uint64) (*device, tenant.Actor, error) {
	caller, ok := callerOf(ctx)
	if !ok {
		return nil, tenant.Actor{}, errf(codes.Unauthenticated, "unauthenticated call")
	}
	if caller.Admin {
		d, err := s.device(id)
		return d, tenant.Admin, err
	}
	s.mu.Lock()
	d, ok := s.devices[id]
	var known []string
	for _, o := range s.devices {
		if o.tenant == caller.Tenant {
			known = append(known, fmt.Sprintf("%d (%s)", o.id, o.cube))
		}
	}
	s.mu.Unlock()
	if !ok || d.tenant != caller.Tenant {
		sort.Strings(known)
		if len(known) == 0 {
			known = []string{"none"}
		}
		return nil, tenant.Actor{}, errf(codes.NotFound, "device id %d is not served (your devices: %s)", id, strings.Join(known, ", "))
	}
	return d, d.actor(), nil
}

// actor is who the device acts as in the engine on its tenant's calls and
// on its own (the event poller): its tenant, or the administrator for a
// device bound to none. The engine then refuses, at the moment of each use,
// a cube that is not the tenant's (the administrator may move it at any
// time, also while a stream is open).
func (d *device) actor() tenant.Actor {
	if d.tenant == "" {
		return tenant.Admin
	}
	return tenant.Of(d.tenant)
}

// notTheTenants explains why a tenant's call found no cube: errNoCube when
// the cube does not exist, or the device's cube is in another tenant (the
// engine refused it as the tenant's; only the message is chosen here).
func (s *Server) notTheTenants(d *device, who tenant.Actor, errNoCube error) error {
	if _, exists := s.eng.CubeHeader(tenant.Admin, d.cube); exists && !who.IsAdmin() {
		return errf(codes.PermissionDenied, "device %d: its cube %s is not in the device's tenant; ask the administrator", d.id, d.cube)
	}
	return errNoCube
}
