package netlab

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DisableTxChecksum turns off transmit checksum offload on dev inside the
// host (like `ethtool -K dev tx off`), and with it segmentation offloads:
// the host's packets leave with their checksums computed. Tests need it
// where an eBPF program puts a host's packets into a tunnel at TC, where a
// checksum left to the NIC would stay unfinished inside the tunnel.
func (h *Host) DisableTxChecksum(dev string) error {
	return h.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		const ethtoolSTXCSUM = 0x17 // ETHTOOL_STXCSUM
		val := struct{ cmd, data uint32 }{ethtoolSTXCSUM, 0}
		var ifr struct {
			name [unix.IFNAMSIZ]byte
			data uintptr
			_    [16]byte
		}
		copy(ifr.name[:], dev)
		ifr.data = uintptr(unsafe.Pointer(&val))
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
			return fmt.Errorf("netlab: %s: %s: tx checksum off: %w", h.Name, dev, errno)
		}
		return nil
	})
}
