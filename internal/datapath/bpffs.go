package datapath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ensureBPFFS checks that root lies on a bpffs, mounting /sys/fs/bpf if
// nothing is mounted there yet.
func ensureBPFFS(root string) error {
	dir := root
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("bpffs %s: %w", dir, err)
	}
	if st.Type == unix.BPF_FS_MAGIC {
		return nil
	}
	if dir == "/sys/fs/bpf" || dir == "/sys/fs" {
		if err := unix.Mount("bpf", "/sys/fs/bpf", "bpf", 0, ""); err != nil {
			return fmt.Errorf("mount bpffs on /sys/fs/bpf: %w (run as root, or mount it first: mount -t bpf bpf /sys/fs/bpf)", err)
		}
		return nil
	}
	return fmt.Errorf("%s is not on a bpf filesystem: mount one (mount -t bpf bpf %s) or choose a directory under /sys/fs/bpf", root, dir)
}

func binarySize(v any) int {
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		panic(err)
	}
	return b.Len()
}
