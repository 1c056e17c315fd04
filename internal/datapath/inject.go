package datapath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

const injectMagic = 0x696e6a65

// injectTrailer mirrors struct edgenf_inject_trailer.
type injectTrailer struct {
	Hop   Hop
	Hook  uint32
	Magic uint32
}

// Injector puts slow-path frames into the fast path: it writes them, with a
// trailer naming their hop, into a private veth pair whose far end runs the
// injector program for both hooks. One mechanism serves XDP and TC cubes.
type Injector struct {
	near, far string
	ifindex   int
	fd        int
}

// tag names this datapath (its pin root) in the kernel objects it owns
// outside bpffs: the injection veth, classic TC filters.
func (d *Datapath) tag() string {
	h := fnv.New32a()
	h.Write([]byte(d.root))
	return fmt.Sprintf("%06x", h.Sum32()&0xffffff)
}

// injectorNames derives the injection veth's name from the pin root, so
// each datapath has its own.
func (d *Datapath) injectorNames() (string, string) {
	base := "enfi" + d.tag()
	return base + "a", base + "b"
}

// InjectorName is the name of the injection veth (its near end) of the
// datapath pinned at root, as Open(root) names it.
func InjectorName(root string) string {
	near, _ := (&Datapath{root: root}).injectorNames()
	return near
}

// opened are the injection veths this process opened, by name (the pin
// root's): leakcheck reports those a test left behind.
var opened sync.Map

// OpenedInjectors lists the injection veths this process opened and did
// not delete, with their datapaths' pin roots; some may have been deleted
// by another process (edgenfd -destroy) since.
func OpenedInjectors() map[string]string {
	out := map[string]string{}
	opened.Range(func(k, v any) bool {
		out[k.(string)] = v.(string)
		return true
	})
	return out
}

// OpenInjector creates (or finds) the injection veth and its programs.
func (d *Datapath) OpenInjector() (*Injector, error) {
	near, far := d.injectorNames()
	opened.Store(near, d.root)
	if _, err := netlink.LinkByName(near); err != nil {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: near, MTU: injectorMTU}, PeerName: far}
		if err := netlink.LinkAdd(veth); err != nil {
			return nil, fmt.Errorf("create injection veth %s: %w", near, err)
		}
	}
	for _, n := range []string{near, far} {
		os.WriteFile(fmt.Sprintf("/proc/sys/net/ipv6/conf/%s/disable_ipv6", n), []byte("1"), 0o644)
		l, err := netlink.LinkByName(n)
		if err != nil {
			return nil, err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return nil, err
		}
	}
	farLink, err := netlink.LinkByName(far)
	if err != nil {
		return nil, err
	}
	if err := d.attachInjector(farLink.Attrs().Index); err != nil {
		return nil, err
	}
	// XDP cubes the injector runs may record copies too (copier.go)
	cdir := filepath.Join(d.root, "inject", "copier")
	if err := os.MkdirAll(cdir, 0o700); err != nil {
		return nil, err
	}
	if err := d.attachCopier(cdir, farLink.Attrs().Index); err != nil {
		return nil, err
	}
	nearLink, err := netlink.LinkByName(near)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	// From now on the fast path makes copies to cubes itself: clones with
	// a hop trailer into the near end (copy.h).
	cfg, err := d.Config()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	cfg.InjectIfindex = uint32(nearLink.Attrs().Index)
	if err := d.SetConfig(cfg); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Injector{near: near, far: far, ifindex: nearLink.Attrs().Index, fd: fd}, nil
}

func (d *Datapath) attachInjector(ifindex int) error {
	dir := filepath.Join(d.root, "inject")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, hook := range []Hook{XDP, TC} {
		lpath := filepath.Join(dir, string(hook)+"_link")
		obj := stubXDP
		if hook == TC {
			obj = stubTC
		}
		spec, err := LoadSpec(obj)
		if err != nil {
			return err
		}
		pins := filepath.Join(dir, string(hook))
		if err := os.MkdirAll(pins, 0o700); err != nil {
			return err
		}
		// An earlier daemon's injector runs its release's program over
		// its maps: this daemon's replaces it (stubupgrade.go).
		_, restore, drop, err := renewMaps(pins, spec)
		if err != nil {
			return fmt.Errorf("injector: %w", err)
		}
		coll, err := d.loadCollection(spec, hook, pins, nil, nil)
		if err != nil {
			restore()
			return fmt.Errorf("load injector: %w", err)
		}
		drop()
		if l, err := link.LoadPinnedLink(lpath, nil); err == nil && !linkedTo(l, ifindex) {
			l.Unpin() // the injection veth was made again: its link went with it
			l.Close()
		} else if err == nil {
			err = l.Update(coll.Programs["edgenf_inject"])
			l.Close()
			coll.Close()
			if err != nil {
				return fmt.Errorf("update injector: %w", err)
			}
			continue
		}
		if hook == TC && d.classicTC {
			err := d.attachClassic(ifindex, Ingress, roleStub, coll.Programs["edgenf_inject"])
			coll.Close()
			if err != nil {
				return fmt.Errorf("attach injector: %w", err)
			}
			continue
		}
		l, err := attach(coll.Programs["edgenf_inject"], ifindex, hook, Ingress)
		coll.Close()
		if err != nil {
			return fmt.Errorf("attach injector: %w", err)
		}
		err = l.Pin(lpath)
		l.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Send puts frame on hop, run by the programs of hook.
func (i *Injector) Send(hook Hook, hop Hop, frame []byte) error {
	tr := injectTrailer{Hop: hop, Magic: injectMagic}
	if hook == TC {
		tr.Hook = 1
	}
	var b bytes.Buffer
	b.Write(frame)
	binary.Write(&b, binary.LittleEndian, tr)
	if len(frame) > MaxInjectFrame {
		return fmt.Errorf("inject: a frame of %d bytes, at most %d", len(frame), MaxInjectFrame)
	}
	sa := &unix.SockaddrLinklayer{Ifindex: i.ifindex}
	if err := unix.Sendto(i.fd, b.Bytes(), 0, sa); err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	return nil
}

// injectorMTU is the MTU of the injection veth.
const injectorMTU = 2048

// MaxInjectFrame is the longest frame the slow path injects (Ethernet
// header included).
var MaxInjectFrame = injectorMTU + 14 - binary.Size(injectTrailer{})

// MaxFrame is the longest frame Send takes.
func (i *Injector) MaxFrame() int { return MaxInjectFrame }

// Close releases the socket; the veth and programs stay for the next daemon.
func (i *Injector) Close() { unix.Close(i.fd) }

// DeleteInjector removes the injection veth of this datapath, if any.
func (d *Datapath) DeleteInjector() {
	near, _ := d.injectorNames()
	if cfg, err := d.Config(); err == nil && cfg.InjectIfindex != 0 {
		cfg.InjectIfindex = 0
		d.SetConfig(cfg)
	}
	if l, err := netlink.LinkByName(near); err == nil {
		netlink.LinkDel(l)
	}
	opened.Delete(near)
}

// DeleteLink removes the injection veth.
func (i *Injector) DeleteLink() {
	if l, err := netlink.LinkByName(i.near); err == nil {
		netlink.LinkDel(l)
	}
	opened.Delete(i.near)
}
