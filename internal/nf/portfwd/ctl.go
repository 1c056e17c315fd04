package portfwd

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/edgenf/edgenf/internal/cube"
	"github.com/edgenf/edgenf/internal/datapath"
)

// entry mirrors struct pf_entry.
type entry struct {
	OutPort uint32
	Flags   uint16
	Action  uint16
	Src     [6]byte
	Dst     [6]byte
}

func (r *Rule) entry(c *cube.Cube) entry {
	e := entry{Flags: flagValid, Action: actions[r.Action]}
	if p := c.Port(r.OutPort); p != nil {
		e.OutPort = uint32(p.Index)
	}
	if hw, err := net.ParseMAC(r.SrcMAC); err == nil {
		e.Flags |= flagSetSrc
		copy(e.Src[:], hw)
	}
	if hw, err := net.ParseMAC(r.DstMAC); err == nil {
		e.Flags |= flagSetDst
		copy(e.Dst[:], hw)
	}
	return e
}

// PuntedFrame is a frame the slow path received from the cube.
type PuntedFrame struct {
	Time   time.Time `json:"time"`
	InPort int       `json:"in_port"`
	Length int       `json:"length"`
	Head   string    `json:"head"` // first bytes, hex
}

const keepPunted = 32

type controller struct {
	mu     sync.Mutex
	punted []PuntedFrame
}

// Sync rewrites the whole forwarding table: at most 64 entries.
func (ctl *controller) Sync(h cube.Handle, c *cube.Cube) error {
	m, err := h.Map("pf_table")
	if err != nil {
		return err
	}
	rules, err := rulesTable.Entries(c)
	if err != nil {
		return err
	}
	want := make([]entry, datapath.MaxPorts)
	for _, v := range rules {
		r := v.(*Rule)
		want[c.Port(r.InPort).Index] = r.entry(c)
	}
	for i, e := range want {
		if err := m.Put(uint32(i), e); err != nil {
			return fmt.Errorf("pf_table[%d]: %w", i, err)
		}
	}
	return nil
}

// HandlePunt keeps the last frames punted by rules with action punt.
func (ctl *controller) HandlePunt(h cube.Handle, c *cube.Cube, p cube.Punt) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	head := p.Frame
	if len(head) > 64 {
		head = head[:64]
	}
	ctl.punted = append(ctl.punted, PuntedFrame{Time: time.Now(), InPort: p.InPort, Length: p.PktLen, Head: fmt.Sprintf("%x", head)})
	if len(ctl.punted) > keepPunted {
		ctl.punted = ctl.punted[len(ctl.punted)-keepPunted:]
	}
}

func (ctl *controller) listPunted() []PuntedFrame {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	return append([]PuntedFrame{}, ctl.punted...)
}

const (
	flagValid  = 1
	flagSetSrc = 2
	flagSetDst = 4
)
