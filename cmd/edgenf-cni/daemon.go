package main

// Talking to the node's edgenfd, and turning its answers into CNI errors.

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/edgenf/edgenf/internal/client"
	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/endpoint"
)

// errQuota is edgenf-cni's CNI error for a pod the daemon refused because
// the tenant is over a quota (its ports, say).
const errQuota = 100

// daemon is the node's edgenfd.
type daemon struct {
	socket string
	api    *client.Client
}

func newDaemon(socket string) *daemon {
	return &daemon{socket: socket, api: client.New(socket, "", "")}
}

// cniError turns a failed request into a CNI error: edgenfd unreachable is
// "try again later" (11); what it refuses because the network configuration
// names something the node lacks or that is not the tenant's is an invalid
// configuration (7); a quota is errQuota.
func (d *daemon) cniError(what string, err error) error {
	var ae *client.Error
	var ne net.Error
	switch {
	case errors.As(err, &ae):
		code := uint(types.ErrInternal)
		switch ae.Code {
		case 400, 404, 409:
			code = types.ErrInvalidNetworkConfig
		case 403:
			code = errQuota
		case 429, 503:
			code = types.ErrTryAgainLater
		}
		return types.NewError(code, fmt.Sprintf("%s: edgenfd: %v", what, ae), "")
	case errors.As(err, &ne):
		return types.NewError(types.ErrTryAgainLater, fmt.Sprintf("%s: edgenfd is not reachable at %s (is it running on this node?)", what, d.socket), err.Error())
	}
	return types.NewError(types.ErrInternal, fmt.Sprintf("%s: %v", what, err), "")
}

func notFound(err error) bool {
	var ae *client.Error
	return errors.As(err, &ae) && ae.Code == 404
}

// health checks that edgenfd answers.
func (d *daemon) health() error {
	return d.api.Do("GET", "/v1/health", nil, nil)
}

// checkTarget refuses, before anything is made, a pod whose cube the node
// lacks or that is not its tenant's.
func (d *daemon) checkTarget(t *target) error {
	if t.Tenant != "" {
		if err := d.api.Do("GET", "/v1/tenants/"+url.PathEscape(t.Tenant), nil, nil); err != nil {
			if notFound(err) {
				return types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("tenant %s: edgenfd on this node knows no tenant of that name", t.Tenant), "")
			}
			return d.cniError("tenant "+t.Tenant, err)
		}
	}
	var c cube.Cube
	if err := d.api.Do("GET", "/v1/cubes/"+url.PathEscape(t.Cube), nil, &c); err != nil {
		if notFound(err) {
			return types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("cube %s (%s): edgenfd on this node has no cube of that name", t.Cube, tenantLabel(t.Tenant)), "")
		}
		return d.cniError("cube "+t.Cube, err)
	}
	if c.Tenant != t.Tenant {
		return types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("cube %s is %s, not %s", t.Cube, tenantLabel(c.Tenant), tenantLabel(t.Tenant)), "")
	}
	return nil
}

func tenantLabel(t string) string {
	if t == "" {
		return "the administrator's"
	}
	return "tenant " + t + "'s"
}

// endpoint returns an endpoint (nil: none).
func (d *daemon) endpoint(name string) (*endpoint.Endpoint, error) {
	var ep endpoint.Endpoint
	if err := d.api.Do("GET", "/v1/endpoints/"+name, nil, &ep); err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, d.cniError("endpoint "+name, err)
	}
	return &ep, nil
}

func (d *daemon) endpoints() ([]*endpoint.Endpoint, error) {
	var list []*endpoint.Endpoint
	if err := d.api.Do("GET", "/v1/endpoints", nil, &list); err != nil {
		return nil, d.cniError("endpoints", err)
	}
	return list, nil
}

// plug makes the endpoint: its port and its interface, in one change. It
// returns the endpoint as made (with the gateways of a routing cube).
func (d *daemon) plug(ep *endpoint.Endpoint) (*endpoint.Endpoint, error) {
	var made endpoint.Endpoint
	if err := d.api.Do("PUT", "/v1/endpoints/"+ep.Name, ep, &made); err != nil {
		return nil, d.cniError("plug "+ep.Interface+" into cube "+ep.Cube, err)
	}
	return &made, nil
}

// unplug removes the endpoint; one that does not exist is fine.
func (d *daemon) unplug(name string) error {
	if err := d.api.Do("DELETE", "/v1/endpoints/"+name, nil, nil); err != nil && !notFound(err) {
		return d.cniError("unplug "+name, err)
	}
	return nil
}

// cube returns a cube (nil: none).
func (d *daemon) cube(name string) (*cube.Cube, error) {
	var c cube.Cube
	if err := d.api.Do("GET", "/v1/cubes/"+url.PathEscape(name), nil, &c); err != nil {
		if notFound(err) {
			return nil, nil
		}
		return nil, d.cniError("cube "+name, err)
	}
	return &c, nil
}
