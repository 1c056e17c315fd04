package e2e

import (
	"net"
	"testing"

	"github.com/edgenf/edgenf/internal/netlab"
	"golang.org/x/sys/unix"
)

// sendRaw writes a frame n times onto a root-namespace interface.
func sendRaw(t *testing.T, ifname string, frame []byte, n int) {
	t.Helper()
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = frame
	}
	must(t, sendFrames(ifname, frames))
}

// sendRawFrom writes frames, as they are, onto a host's eth0.
func sendRawFrom(t *testing.T, h *netlab.Host, frames ...[]byte) {
	t.Helper()
	must(t, h.Do(func() error { return sendFrames("eth0", frames) }))
}

func sendFrames(ifname string, frames [][]byte) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, f := range frames {
		if err := unix.Sendto(fd, f, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
			return err
		}
	}
	return nil
}

// quietHost makes a host with eth0 at cidr, peered with a root-side veth
// (returned), and IPv6 off, so that the only frames are the test's.
func quietHost(t *testing.T, lab *netlab.Lab, name, cidr string) (*netlab.Host, string) {
	t.Helper()
	h, err := lab.Host(name)
	if err != nil {
		t.Fatal(err)
	}
	must(t, h.Sysctl("net.ipv6.conf.default.disable_ipv6", "1"))
	root, err := lab.Veth(h, "eth0", name, cidr)
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}
