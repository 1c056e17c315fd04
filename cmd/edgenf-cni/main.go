// Command edgenf-cni is edgenf's CNI plugin (CNI spec 1.1: ADD, DEL, CHECK,
// GC, STATUS, VERSION). It puts a pod's interface into its tenant's service
// chain: a veth pair whose host end the node's edgenfd peers with a port of
// the tenant's cube, addresses from any IPAM plugin. See docs/kubernetes.md.
//
// Run as `edgenf-cni install ...` it installs itself and a network
// configuration on a node (the DaemonSet's init container).
package main

import (
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"
)

// about is printed when the plugin is run without CNI_COMMAND.
const about = "edgenf-cni: plugs pods into edgenf tenants' service chains (see docs/kubernetes.md); `edgenf-cni install -h` installs it"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "install" {
		if err := install(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "edgenf-cni install:", err)
			os.Exit(1)
		}
		return
	}
	skel.PluginMainFuncs(skel.CNIFuncs{Add: withDeadline(cmdAdd), Del: withDeadline(cmdDel), Check: withDeadline(cmdCheck),
		GC: withDeadline(cmdGC), Status: withDeadline(cmdStatus)},
		version.PluginSupports("0.4.0", "1.0.0", "1.1.0"), about)
}
