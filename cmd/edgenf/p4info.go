package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// p4infoFormat names the P4Info encoding a file's extension asks for, as
// p4c's --p4runtime-files does: .txt (protobuf text format, what
// p4runtime-shell's --config and ONOS read), .bin (protobuf binary) or
// .json (protobuf's JSON mapping).
func p4infoFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".txt", ".bin", ".json":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--p4info %s: the file's extension picks the format: .txt (protobuf text), .bin (protobuf binary) or .json", path)
	}
}

func writeP4Info(m *p4info.P4Info, path string) error {
	format, err := p4infoFormat(path)
	if err != nil {
		return err
	}
	var b []byte
	switch format {
	case "txt":
		b, err = m.ProtoText()
	case "bin":
		b, err = m.ProtoBinary()
	default:
		b, err = m.MarshalP4Info()
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
