package main

// The pod's veth pair: one end in the pod's network namespace, the other
// (named like the endpoint) in the node's, where edgenfd peers it.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
)

// openNetNS opens the pod's namespace; a missing one is "container
// unknown" (3).
func openNetNS(path string) (ns.NetNS, error) {
	n, err := ns.GetNS(path)
	if err != nil {
		return nil, types.NewError(types.ErrUnknownContainer, fmt.Sprintf("network namespace %q: %v", path, err), "")
	}
	return n, nil
}

// makeVeth creates the pair inside the pod's namespace and moves the host
// end to the plugin's own (the node's). A host interface of that name left
// by an ADD cut short is removed first: the name is this attachment's.
func makeVeth(netns ns.NetNS, ifName, hostName string, mtu int) (host, cont net.Interface, err error) {
	if err := deleteLink(hostName); err != nil {
		return host, cont, err
	}
	hostNS, err := ns.GetCurrentNS()
	if err != nil {
		return host, cont, err
	}
	defer hostNS.Close()
	// One queue per CPU on both ends: an XDP redirect into a veth lands in
	// the ring of the sending CPU's queue, so CPUs never share one, nor
	// the NAPI poll that drains it.
	queues := runtime.NumCPU()
	err = netns.Do(func(ns.NetNS) error {
		v := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: ifName, MTU: mtu, NumTxQueues: queues, NumRxQueues: queues},
			PeerName:  hostName, PeerNamespace: netlink.NsFd(int(hostNS.Fd())),
			PeerNumTxQueues: uint32(queues), PeerNumRxQueues: uint32(queues),
		}
		if mtu > 0 {
			v.PeerMTU = uint32(mtu)
		}
		if err := netlink.LinkAdd(v); err != nil {
			return err
		}
		l, err := netlink.LinkByName(ifName)
		if err == nil {
			// up even without addresses (a layer-2 pod; IPAM's would do it)
			err = netlink.LinkSetUp(l)
		}
		if err != nil {
			return err
		}
		cont = ifaceOf(l)
		// The addresses come from IPAM, unique by construction: duplicate
		// address detection would only hold IPv6 back for a second. (No
		// IPv6 in the pod: nothing to set.)
		_ = writeSysctl("net/ipv6/conf/"+ifName+"/accept_dad", "0")
		return nil
	})
	if err == nil {
		// The node's stack has nothing to say on the pod's link: no IPv6
		// link-local address, router or neighbour solicitations from the
		// host end into the tenant's chain.
		_ = writeSysctl("net/ipv6/conf/"+hostName+"/disable_ipv6", "1")
		var l netlink.Link
		if l, err = netlink.LinkByName(hostName); err == nil {
			err = netlink.LinkSetUp(l)
			host = ifaceOf(l)
		}
	}
	if err != nil {
		return host, cont, types.NewError(types.ErrInternal, fmt.Sprintf("veth %s/%s: %v", ifName, hostName, err), "")
	}
	return host, cont, nil
}

// configure gives the pod's interface its addresses and routes.
func configure(netns ns.NetNS, ifName string, res *current.Result) error {
	err := netns.Do(func(ns.NetNS) error { return ipam.ConfigureIface(ifName, res) })
	if err != nil {
		return types.NewError(types.ErrInternal, fmt.Sprintf("configure %s: %v", ifName, err), "")
	}
	return nil
}

// deleteLink deletes an interface of the current namespace if it exists.
func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return types.NewError(types.ErrInternal, fmt.Sprintf("interface %s: %v", name, err), "")
	}
	if err := netlink.LinkDel(l); err != nil {
		return types.NewError(types.ErrInternal, fmt.Sprintf("delete interface %s: %v", name, err), "")
	}
	return nil
}

// deletePodLink deletes the pod's end inside its namespace, if both still
// exist (DEL after the pod's namespace is gone finds neither).
func deletePodLink(netnsPath, ifName string) error {
	if netnsPath == "" {
		return nil
	}
	netns, err := ns.GetNS(netnsPath)
	if err != nil {
		return nil
	}
	defer netns.Close()
	return netns.Do(func(ns.NetNS) error { return deleteLink(ifName) })
}

func writeSysctl(key, value string) error {
	return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644)
}

func ifaceOf(l netlink.Link) net.Interface {
	a := l.Attrs()
	return net.Interface{Index: a.Index, MTU: a.MTU, Name: a.Name, HardwareAddr: a.HardwareAddr, Flags: a.Flags}
}
