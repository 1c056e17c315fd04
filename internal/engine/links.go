package engine

// Following the Linux interfaces the engine peers. Peerings name
// interfaces; the kernel objects behind them (the stub's link, its slot in
// the shared ifindex maps, the hops that redirect to the interface) hold
// an ifindex. An interface moved to another network namespace, or deleted
// and made again, changes ifindex under the same name, and its old number
// can go to another interface: the engine watches the kernel's link
// events and puts its objects back in line with the names.

import (
	"fmt"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/vishvananda/netlink"
)

// linkWatch is the subscription to the kernel's link events of the
// daemon's namespace; stop ends it.
type linkWatch struct {
	done chan struct{}
}

// linkEvents is how many link events wait for the watcher, and
// linkRecvBuf the socket's buffer: a burst beyond them (hundreds of pods
// made at once) overruns the socket, and the watcher subscribes again and
// checks every interface it follows.
const (
	linkEvents  = 256
	linkRecvBuf = 1 << 20
)

func startLinkWatch(e *Engine) *linkWatch {
	w := &linkWatch{done: make(chan struct{})}
	go w.run(e)
	return w
}

// stop ends the watcher. Called with e.mu held: the watcher, which may be
// waiting for it, sees e.links changed and does nothing more.
func (w *linkWatch) stop() { close(w.done) }

func (w *linkWatch) run(e *Engine) {
	for {
		ch := make(chan netlink.LinkUpdate, linkEvents)
		err := netlink.LinkSubscribeWithOptions(ch, w.done, netlink.LinkSubscribeOptions{
			ReceiveBufferSize: linkRecvBuf,
			ErrorCallback: func(err error) {
				select {
				case <-w.done:
					return // stop closed the socket under the receive
				default:
				}
				e.log.Warn("interface events: subscription lost, checking every peered interface", "err", err)
			},
		})
		if err != nil {
			e.log.Error("interface events: cannot subscribe; a moved or deleted peered interface is not noticed", "err", err)
		} else {
			// what changed before this subscription (at start, or while
			// an overrun one was down)
			e.linksChanged(w, nil)
			for u := range ch {
				e.linksChanged(w, &u)
			}
		}
		select {
		case <-w.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// linksChanged puts the engine's interface objects in line after a link
// event (nil: any number of them missed): for each interface it follows
// that the event may concern, by name or by the index its stubs were
// attached by.
func (e *Engine) linksChanged(w *linkWatch, u *netlink.LinkUpdate) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.links != w {
		return // the engine closed
	}
	names := map[string]bool{}
	for k, s := range e.stubs {
		if u == nil || k.Iface == u.Attrs().Name || s.Ifindex() == u.Attrs().Index {
			names[k.Iface] = true
		}
	}
	for name := range e.ifaceDown {
		if u == nil || name == u.Attrs().Name {
			names[name] = true
		}
	}
	for _, name := range sorted(names) {
		e.relink(name)
	}
}

// relink makes what the engine holds for interface name follow the
// interface now named so. Stubs attached by another ifindex are detached
// (from the interface that moved away, renamed or went: its old number
// leads nowhere now, so an interface that gets it inherits nothing), then
// the interface's peering is planned again, as the topology asks: its
// cube's hop drops while the name is missing, and a new interface of that
// name is peered by its own ifindex. Called with e.mu held.
func (e *Engine) relink(name string) {
	idx, missing := ifindex(name)
	stale := false
	for _, k := range e.stubKeysOf(name) {
		if missing == nil && e.stubs[k].Ifindex() == idx {
			continue
		}
		if err := e.dp.DetachStub(k.Iface, k.Hook, k.Dir); err != nil {
			e.log.Error("interface gone: its stub could not be removed", "interface", name, "err", err)
		}
		delete(e.stubs, k)
		delete(e.stubHops, k)
		delete(e.stubEntry, k)
		delete(e.prepared, k)
		stale = true
	}
	_, wasDown := e.ifaceDown[name]
	if !stale && (missing != nil || !wasDown) {
		return
	}
	clear(e.redirectReady) // by ifindex: the old one may be another interface's now
	cs := changes(e.topo, e.topo, dirty{points: []string{name}}, e.chainsOf(e.topo, dirty{}), e.PeerOf)
	if err := e.reconcileSet(e.topo, false, cs); err != nil {
		e.log.Error("interface changed: its peering could not be made again", "interface", name, "err", err)
		e.ifaceDown[name] = err.Error()
		return
	}
	if missing != nil {
		e.log.Warn("peered interface gone (deleted, or moved to another namespace): its traffic is dropped until it is back", "interface", name)
	} else {
		e.log.Info("peered interface back: peered again", "interface", name, "ifindex", idx)
	}
}

// stubKeysOf lists the stubs on interface name.
func (e *Engine) stubKeysOf(name string) []StubKey {
	var out []StubKey
	for _, hook := range []datapath.Hook{datapath.XDP, datapath.TC} {
		for _, dir := range []datapath.Direction{datapath.Ingress, datapath.Egress} {
			if k := (StubKey{name, hook, dir}); e.stubs[k] != nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// noteMissing records which interfaces of a reconcile's plan are missing
// (cs nil: of the whole topology), for views: a peering with one is down.
func (e *Engine) noteMissing(cs *changeSet, missing []string) {
	if cs == nil {
		clear(e.ifaceDown)
	} else {
		for name := range cs.ifaces {
			delete(e.ifaceDown, name)
		}
	}
	for _, name := range missing {
		e.ifaceDown[name] = fmt.Sprintf("no Linux interface named %q in edgenfd's namespace (deleted, or moved to another one): its traffic is dropped until it is back", name)
	}
}

// peerDown says why the peering of a port with an interface is down ("":
// it is not). Called with e.mu held.
func (e *Engine) peerDown(peer string) string {
	ep, err := cube.ParseEndpoint(peer)
	if err != nil || ep.IsCube() {
		return ""
	}
	return e.ifaceDown[ep.Iface]
}
