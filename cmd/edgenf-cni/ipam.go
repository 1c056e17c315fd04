package main

// IPAM is delegated to any IPAM plugin (host-local, dhcp, static, ...),
// found in CNI_PATH. A plugin that speaks an older CNI version than the
// network's (Debian 12's reference plugins stop at 1.0.0) is called with
// the newest version it speaks; its result is converted.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
)

// ipamCall runs the IPAM plugin of ipamConf for one attachment.
type ipamCall struct {
	conf     *NetConf
	ipamConf json.RawMessage
	// args are the CNI environment for the plugin (command set per call).
	args invoke.Args
}

func newIPAMCall(conf *NetConf, ipamConf json.RawMessage, containerID, netns, ifName string) *ipamCall {
	return &ipamCall{conf: conf, ipamConf: ipamConf, args: invoke.Args{
		ContainerID: containerID, NetNS: netns, IfName: ifName,
		PluginArgsStr: os.Getenv("CNI_ARGS"), Path: os.Getenv("CNI_PATH"),
	}}
}

func (c *ipamCall) plugin() (string, error) {
	var ip struct {
		Type string `json:"type"`
	}
	json.Unmarshal(c.ipamConf, &ip)
	p, err := invoke.FindInPath(ip.Type, filepath.SplitList(c.args.Path))
	if err != nil {
		return "", types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("IPAM plugin %q: %v", ip.Type, err), "CNI_PATH="+c.args.Path)
	}
	return p, nil
}

// netconf is the configuration the IPAM plugin gets: the network's, with
// this pod's ipam object and the given CNI version.
func (c *ipamCall) netconf(ver string) ([]byte, error) {
	m := make(map[string]json.RawMessage, len(c.conf.raw))
	for k, v := range c.conf.raw {
		m[k] = v
	}
	m["ipam"] = c.ipamConf
	v, _ := json.Marshal(ver)
	m["cniVersion"] = v
	delete(m, "cniVersions")
	return json.Marshal(m)
}

// run calls the plugin with command; if it refuses the network's CNI
// version, it is called again with the newest version it speaks that is
// not newer than the network's. minVer is the least version the command
// needs: a plugin older than that is skipped (skipped reports it).
func (c *ipamCall) run(ctx context.Context, command, minVer string, withResult bool) (res types.Result, skipped bool, err error) {
	plugin, err := c.plugin()
	if err != nil {
		return nil, false, err
	}
	name := filepath.Base(plugin)
	args := c.args
	args.Command = command
	ver := c.conf.CNIVersion
	if atLeast(minVer, "1.1.0") {
		// plugins older than the command do not refuse the version,
		// they do not know the command: ask first
		info, err := invoke.GetVersionInfo(ctx, plugin, nil)
		if err != nil {
			return nil, false, fmt.Errorf("IPAM plugin %s: %w", name, err)
		}
		if ver = newest(info, c.conf.CNIVersion); ver == "" || !atLeast(ver, minVer) {
			return nil, true, nil
		}
	}
	for attempt := 0; ; attempt++ {
		nc, err := c.netconf(ver)
		if err != nil {
			return nil, false, err
		}
		if withResult {
			res, err = invoke.ExecPluginWithResult(ctx, plugin, nc, &args, nil)
		} else {
			err = invoke.ExecPluginWithoutResult(ctx, plugin, nc, &args, nil)
		}
		var te *types.Error
		if err == nil {
			return res, false, nil
		}
		if attempt > 0 || !errors.As(err, &te) || te.Code != types.ErrIncompatibleCNIVersion {
			return nil, false, fmt.Errorf("IPAM plugin %s %s: %w", name, command, err)
		}
		info, verr := invoke.GetVersionInfo(ctx, plugin, nil)
		if verr != nil {
			return nil, false, fmt.Errorf("IPAM plugin %s %s: %w", name, command, err)
		}
		best := newest(info, c.conf.CNIVersion)
		if best != "" && !atLeast(best, minVer) {
			return nil, true, nil
		}
		if best == "" || best == ver {
			return nil, false, fmt.Errorf("IPAM plugin %s %s: %w", name, command, err)
		}
		ver = best
	}
}

// add allocates the pod's addresses.
func (c *ipamCall) add(ctx context.Context) (*current.Result, error) {
	r, _, err := c.run(ctx, "ADD", "0.1.0", true)
	if err != nil {
		return nil, err
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return nil, fmt.Errorf("IPAM result: %w", err)
	}
	if len(res.IPs) == 0 {
		return nil, errors.New("IPAM plugin returned no address")
	}
	return res, nil
}

// del releases the pod's addresses (idempotent, like every IPAM DEL).
func (c *ipamCall) del(ctx context.Context) error {
	_, _, err := c.run(ctx, "DEL", "0.1.0", false)
	return err
}

// check asks the IPAM plugin whether the pod's addresses are still its.
func (c *ipamCall) check(ctx context.Context) error {
	_, _, err := c.run(ctx, "CHECK", "0.4.0", false)
	return err
}

// gc asks the IPAM plugin to release what no valid attachment holds
// (plugins older than CNI 1.1 cannot: skipped).
func (c *ipamCall) gc(ctx context.Context) error {
	_, _, err := c.run(ctx, "GC", "1.1.0", false)
	return err
}

// status asks whether the IPAM plugin can allocate (skipped for plugins
// older than CNI 1.1).
func (c *ipamCall) status(ctx context.Context) error {
	_, _, err := c.run(ctx, "STATUS", "1.1.0", false)
	return err
}

// newest is the newest version the plugin speaks that is not newer than
// max ("": none).
func newest(info version.PluginInfo, max string) string {
	best := ""
	for _, v := range info.SupportedVersions() {
		if !atLeast(max, v) {
			continue
		}
		if best == "" || !atLeast(best, v) {
			best = v
		}
	}
	return best
}

func atLeast(v, min string) bool {
	ok, err := version.GreaterThanOrEqualTo(v, min)
	return err == nil && ok
}
