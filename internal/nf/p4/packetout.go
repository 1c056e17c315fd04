package p4

// Packet-out: a frame injected through the CPU port.

import (
	"encoding/hex"
	"strings"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
	"github.com/edgenf/edgenf/internal/p4/p4info"
)

// PacketOutArgs are the arguments of the packet_out action: the frame (hex,
// an Ethernet frame) and the values of the program's packet_out header,
// which is put in front of the frame; the result enters the program on the
// CPU port, as from a P4Runtime controller.
type PacketOutArgs struct {
	Frame    string            `json:"frame" pattern:"^(0x)?([0-9A-Fa-f]{2} ?){14,}$" doc:"an Ethernet frame in hex, at least 14 bytes; with the program's packet_out header at most what the slow path injects (409 otherwise)"`
	Metadata map[string]string `json:"metadata,omitempty" format:"p4-value" doc:"field of the program's packet_out header (404 otherwise) = value"`
}

func packetOut(h cube.Handle, c *cube.Cube, args any) (any, error) {
	a, _ := args.(*PacketOutArgs)
	if a == nil || a.Frame == "" {
		return nil, cube.Errorf("frame", "required: the frame in hex")
	}
	frame, err := hex.DecodeString(strings.ReplaceAll(strings.TrimPrefix(a.Frame, "0x"), " ", ""))
	if err != nil {
		return nil, cube.Errorf("frame", "not hex: %v", err)
	}
	if len(frame) < 14 || len(frame) > datapath.MaxInjectFrame {
		return nil, cube.Errorf("frame", "%d bytes: want an Ethernet frame of 14..%d bytes", len(frame), datapath.MaxInjectFrame)
	}
	if err := checkForms("metadata", a.Metadata, p4info.ValueSyntax); err != nil {
		return nil, err
	}
	r, err := programOf(c)
	if err != nil {
		return nil, err
	}
	var hdr []byte
	if sp := r.Info.Edgenf.SlowPath; sp != nil && sp.PacketOut != nil {
		for _, k := range sortedKeys(a.Metadata) {
			if sp.PacketOut.Field(k) == nil {
				return nil, cube.NotFound("metadata."+k, "the program's packet_out header has no field %q", k)
			}
		}
		if hdr, err = sp.PacketOut.Encode(a.Metadata); err != nil {
			return nil, cube.Conflict("metadata", "%v", err)
		}
	} else if len(a.Metadata) > 0 {
		return nil, cube.NotFound("metadata", "the program has no @controller_header(\"packet_out\") header")
	}
	if n := len(hdr) + len(frame); n > datapath.MaxInjectFrame {
		return nil, cube.Conflict("frame", "%d bytes with the program's packet_out header: at most %d", n, datapath.MaxInjectFrame)
	}
	s, err := stateOf(h)
	if err != nil {
		return nil, err
	}
	port := r.Info.Edgenf.CPUPort
	if err := h.Inject(port, append(hdr, frame...)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.st.PacketOuts++
	s.mu.Unlock()
	return map[string]any{"injected": len(hdr) + len(frame), "cpu_port": port}, nil
}
