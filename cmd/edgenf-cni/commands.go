package main

// The CNI commands. ADD makes, in this order, the pod's addresses (IPAM),
// its veth pair, the endpoint in edgenfd (the tenant's port and interface,
// one change; on a router, its gateways and host routes too), and the
// pod's addresses and routes inside it; whatever fails undoes what came
// before, so a refused pod leaves the node as it was. DEL
// undoes exactly that (the veth before the endpoint: never a moment when
// the pod's frames meet no stub) and is idempotent. GC removes the
// endpoints (and addresses) of attachments the runtime no longer has.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"

	"github.com/edgenf/edgenf/internal/endpoint"
)

// timeout bounds one command (the runtime has its own, longer ones).
const timeout = 2 * time.Minute

// withDeadline runs a command under timeout.
func withDeadline(cmd func(context.Context, *skel.CmdArgs) error) func(*skel.CmdArgs) error {
	return func(args *skel.CmdArgs) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return cmd(ctx, args)
	}
}

func cmdAdd(ctx context.Context, args *skel.CmdArgs) (err error) {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	cargs, err := parseArgs(args.Args)
	if err != nil {
		return err
	}
	t, err := conf.resolve(cargs)
	if err != nil {
		return err
	}
	if conf.RawPrevResult != nil {
		if err := parsePrevResult(conf); err != nil {
			return err
		}
	}
	d := newDaemon(conf.Socket)
	if err := d.checkTarget(t); err != nil {
		return err
	}
	name := endpointName(conf.Name, args.ContainerID, args.IfName)
	// An ADD cut short may have left its endpoint: it is this
	// attachment's, made again below.
	if err := d.unplug(name); err != nil {
		return err
	}
	netns, err := openNetNS(args.Netns)
	if err != nil {
		return err
	}
	defer netns.Close()

	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	var ipRes *current.Result
	if len(t.IPAM) > 0 {
		ic := newIPAMCall(conf, t.IPAM, args.ContainerID, args.Netns, args.IfName)
		if ipRes, err = ic.add(ctx); err != nil {
			return ipamFailed(err)
		}
		undo = append(undo, func() { ic.del(context.Background()) })
	}
	host, cont, err := makeVeth(netns, args.IfName, name, conf.MTU)
	if err != nil {
		return err
	}
	undo = append(undo, func() { deleteLink(name) })
	res := &current.Result{
		CNIVersion: current.ImplementedSpecVersion,
		Interfaces: []*current.Interface{
			{Name: host.Name, Mac: host.HardwareAddr.String()},
			{Name: cont.Name, Mac: cont.HardwareAddr.String(), Sandbox: args.Netns},
		},
		DNS: conf.DNS,
	}
	if ipRes != nil {
		for _, ipc := range ipRes.IPs {
			ipc.Interface = current.Int(1)
			res.IPs = append(res.IPs, ipc)
		}
		res.Routes = ipRes.Routes
		if conf.DNS.IsEmpty() {
			res.DNS = ipRes.DNS
		}
	}
	ep := &endpoint.Endpoint{
		Name: name, Tenant: t.Tenant, Slice: t.Slice, Cube: t.Cube, Interface: host.Name,
		Network: conf.Name, ContainerID: args.ContainerID, IfName: args.IfName, Pod: t.Pod, MAC: cont.HardwareAddr.String(),
	}
	for _, ipc := range res.IPs {
		ep.Addresses = append(ep.Addresses, ipc.Address.String())
	}
	made, err := d.plug(ep)
	if err != nil {
		return err
	}
	undo = append(undo, func() { d.unplug(name) })
	if len(made.Gateways) > 0 {
		// a router's port: the pod's gateways are the port's, which
		// edgenfd chose
		if err := routeVia(res, made.Gateways); err != nil {
			return err
		}
		if err := configureRouted(netns, args.IfName, res); err != nil {
			return err
		}
	} else if ipRes != nil {
		if err := configure(netns, args.IfName, res); err != nil {
			return err
		}
	}
	if conf.PrevResult != nil {
		if res, err = chained(conf, res); err != nil {
			return err
		}
	}
	return types.PrintResult(res, conf.CNIVersion)
}

// chained puts this plugin's interfaces, addresses and routes after those
// of the previous plugins of the list.
func chained(conf *NetConf, res *current.Result) (*current.Result, error) {
	prev, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return nil, types.NewError(types.ErrDecodingFailure, "prevResult: "+err.Error(), "")
	}
	offset := len(prev.Interfaces)
	prev.Interfaces = append(prev.Interfaces, res.Interfaces...)
	for _, ipc := range res.IPs {
		ipc.Interface = current.Int(*ipc.Interface + offset)
		prev.IPs = append(prev.IPs, ipc)
	}
	prev.Routes = append(prev.Routes, res.Routes...)
	if prev.DNS.IsEmpty() {
		prev.DNS = res.DNS
	}
	return prev, nil
}

func cmdDel(ctx context.Context, args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	d := newDaemon(conf.Socket)
	name := endpointName(conf.Name, args.ContainerID, args.IfName)
	// edgenfd first: if it is down, nothing is touched and the runtime
	// retries the DEL.
	ep, err := d.endpoint(name)
	if err != nil {
		return err
	}
	ipamConf := conf.ipam
	if ep != nil {
		ipamConf = conf.ipamOf(ep.Tenant, ep.Slice)
	} else if cargs, err := parseArgs(args.Args); err == nil {
		// never plugged (an ADD that failed, or a DEL repeated): release
		// what the pod's tenant's IPAM may hold
		if t, err := conf.resolve(cargs); err == nil {
			ipamConf = t.IPAM
		}
	}
	// The links go before the endpoint: a host end left without its
	// port's stub would hand the pod's frames to the node's own stack.
	if err := deleteLink(name); err != nil {
		return err
	}
	if err := deletePodLink(args.Netns, args.IfName); err != nil {
		return err
	}
	if ep != nil {
		if err := d.unplug(name); err != nil {
			return err
		}
	}
	if len(ipamConf) > 0 {
		if err := newIPAMCall(conf, ipamConf, args.ContainerID, args.Netns, args.IfName).del(ctx); err != nil {
			return ipamFailed(err)
		}
	}
	return nil
}

func cmdCheck(ctx context.Context, args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	cargs, err := parseArgs(args.Args)
	if err != nil {
		return err
	}
	t, err := conf.resolve(cargs)
	if err != nil {
		return err
	}
	if conf.RawPrevResult == nil {
		return types.NewError(types.ErrInvalidNetworkConfig, "CHECK needs prevResult (the result of ADD)", "")
	}
	if err := parsePrevResult(conf); err != nil {
		return err
	}
	prev, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return types.NewError(types.ErrDecodingFailure, "prevResult: "+err.Error(), "")
	}
	d := newDaemon(conf.Socket)
	name := endpointName(conf.Name, args.ContainerID, args.IfName)
	ep, err := d.endpoint(name)
	if err != nil {
		return err
	}
	if ep == nil {
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("edgenfd has no endpoint %s for container %s", name, args.ContainerID), "")
	}
	if ep.Cube != t.Cube || ep.Tenant != t.Tenant || ep.Interface != name {
		return checkFailed("endpoint %s is on cube %s of %s, the network says cube %s of %s", name, ep.Cube, tenantLabel(ep.Tenant), t.Cube, tenantLabel(t.Tenant))
	}
	c, err := d.cube(ep.Cube)
	if err != nil {
		return err
	}
	if c == nil || c.Port(name) == nil || c.Port(name).Peer != name {
		return checkFailed("cube %s has no port %s peered with %s", ep.Cube, name, name)
	}
	hl, err := netlink.LinkByName(name)
	if err != nil {
		return checkFailed("host interface %s: %v", name, err)
	}
	if hl.Attrs().OperState == netlink.OperDown || hl.Attrs().Flags&net.FlagUp == 0 {
		return checkFailed("host interface %s is down", name)
	}
	var contIf *current.Interface
	var ips []*current.IPConfig // this interface's (a list may have others before it)
	for idx, i := range prev.Interfaces {
		if i.Name == args.IfName && i.Sandbox != "" {
			contIf = i
			for _, ipc := range prev.IPs {
				if ipc.Interface != nil && *ipc.Interface == idx {
					ips = append(ips, ipc)
				}
			}
		}
	}
	if contIf == nil {
		return checkFailed("prevResult has no interface %s in the pod", args.IfName)
	}
	netns, err := openNetNS(args.Netns)
	if err != nil {
		return err
	}
	defer netns.Close()
	err = netns.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(args.IfName)
		if err != nil {
			return checkFailed("interface %s in the pod: %v", args.IfName, err)
		}
		if contIf.Mac != "" && l.Attrs().HardwareAddr.String() != contIf.Mac {
			return checkFailed("interface %s has MAC %s, ADD gave it %s", args.IfName, l.Attrs().HardwareAddr, contIf.Mac)
		}
		if _, ok := l.(*netlink.Veth); !ok {
			return checkFailed("interface %s in the pod is a %s, not a veth", args.IfName, l.Type())
		}
		validate := ip.ValidateExpectedInterfaceIPs
		if len(ep.Gateways) > 0 {
			validate = validateRoutedIPs
		}
		if err := validate(args.IfName, ips); err != nil {
			return checkFailed("%v", err)
		}
		if err := ip.ValidateExpectedRoute(prev.Routes); err != nil {
			return checkFailed("%v", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(t.IPAM) > 0 {
		if err := newIPAMCall(conf, t.IPAM, args.ContainerID, args.Netns, args.IfName).check(ctx); err != nil {
			return checkFailed("%v", err)
		}
	}
	return nil
}

// ipamFailed is the CNI error of a failed IPAM call: the code the IPAM
// plugin (or edgenf-cni, for a plugin not found) gave, else internal.
func ipamFailed(err error) error {
	var te *types.Error
	if errors.As(err, &te) {
		return types.NewError(te.Code, err.Error(), te.Details)
	}
	return types.NewError(types.ErrInternal, err.Error(), "")
}

// errCheckFailed is edgenf-cni's CNI error for a CHECK that found the
// attachment no longer as ADD made it.
const errCheckFailed = 102

func checkFailed(format string, a ...any) error {
	return types.NewError(errCheckFailed, "CHECK: "+fmt.Sprintf(format, a...), "")
}

func parsePrevResult(conf *NetConf) error {
	if err := version.ParsePrevResult(&conf.PluginConf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "prevResult: "+err.Error(), "")
	}
	return nil
}

// cmdGC removes the endpoints of this network whose attachment the
// runtime no longer lists (containers that went without a DEL), their host
// interfaces and addresses, then lets the IPAM plugins collect theirs.
func cmdGC(ctx context.Context, args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	// Without the list every endpoint of the network would look stale:
	// a GC that does not say which attachments live removes nothing.
	_, spec := conf.raw["cni.dev/valid-attachments"]
	_, libcni := conf.raw["cni.dev/attachments"]
	if !spec && !libcni {
		return types.NewError(types.ErrInvalidNetworkConfig, "GC needs cni.dev/valid-attachments, the attachments the runtime still has", "")
	}
	d := newDaemon(conf.Socket)
	valid := map[string]bool{}
	for _, a := range conf.ValidAttachments {
		valid[endpointName(conf.Name, a.ContainerID, a.IfName)] = true
	}
	list, err := d.endpoints()
	if err != nil {
		return err
	}
	var errs []error
	for _, ep := range list {
		if ep.Network != conf.Name || valid[ep.Name] {
			continue
		}
		if err := d.unplug(ep.Name); err != nil {
			return err
		}
		if err := deleteLink(ep.Interface); err != nil {
			errs = append(errs, err)
		}
		if ic := conf.ipamOf(ep.Tenant, ep.Slice); len(ic) > 0 {
			if err := newIPAMCall(conf, ic, ep.ContainerID, "", ep.IfName).del(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ic := range conf.ipamConfigs() {
		if err := newIPAMCall(conf, ic, "", "", "").gc(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return types.NewError(types.ErrInternal, "GC: "+err.Error(), "")
	}
	return nil
}

// cmdStatus reports whether pods can be added: edgenfd answers, and the
// IPAM plugins that can tell say they can allocate.
func cmdStatus(ctx context.Context, args *skel.CmdArgs) error {
	conf, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	d := newDaemon(conf.Socket)
	if err := d.health(); err != nil {
		return types.NewError(types.ErrPluginNotAvailable, fmt.Sprintf("edgenfd is not reachable at %s: pods cannot be added (is it running on this node?)", conf.Socket), err.Error())
	}
	for _, ic := range conf.ipamConfigs() {
		if err := newIPAMCall(conf, ic, "", "", "").status(ctx); err != nil {
			return types.NewError(types.ErrPluginNotAvailable, err.Error(), "")
		}
	}
	return nil
}
