package e2e

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// sendRaw writes a frame n times onto a root-namespace interface.
func sendRaw(t *testing.T, ifname string, frame []byte, n int) {
	t.Helper()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for i := 0; i < n; i++ {
		if err := unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
			t.Fatal(err)
		}
	}
}
