package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/pfcp"
	"github.com/edgenf/edgenf/internal/pfcp/client"
	"github.com/edgenf/edgenf/internal/testenv"
)

// The operator drains the upf before maintenance with the CLI: the SMF (no
// EPFAR) is asked to release the association with the graceful release
// period, the view shows it releasing, new sessions are refused while the
// existing one keeps its place until the SMF releases; a bad period is
// refused and changes nothing.
func TestUPFDrainFromTheCLI(t *testing.T) {
	testenv.E2E(t)
	l := newUPFLab(t)
	l.attach(t, "ue1", 0x31, 0x9031)
	set := func(extra string) (string, error) {
		return l.d.try("cube", "set", "upf1", "--set",
			fmt.Sprintf(`pfcp={"address":"127.0.0.1","port":%d%s}`, l.pfcp.Port(), extra))
	}
	if out, err := set(`,"drain":true,"graceful_release_seconds":100000`); err == nil || !strings.Contains(out, "graceful_release_seconds") {
		t.Fatalf("a period beyond a day accepted: %v\n%s", err, out)
	}
	if out, err := set(`,"drain":true,"graceful_release_seconds":600`); err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	var m *pfcp.Message
	select {
	case m = <-l.smf.Updates():
	case <-time.After(10 * time.Second):
		t.Fatal("no Association Update Request from the draining upf")
	}
	ar, gp := m.IEs.Find(pfcp.IEAssociationReleaseRequest), m.IEs.Find(pfcp.IEGracefulReleasePeriod)
	if ar == nil || ar.Flags() != pfcp.FlagSARR || gp == nil {
		t.Fatalf("update %+v: want SARR and the graceful release period", m)
	}
	if d, err := gp.Timer(); err != nil || d != 10*time.Minute {
		t.Fatalf("graceful release period %v %v, want 10 minutes", d, err)
	}
	if out := l.d.cli("view", "upf1", "associations"); !strings.Contains(out, "releasing") {
		t.Fatalf("associations view:\n%s", out)
	}
	if _, r, err := l.smf.Establish(0x32, client.PDR{ID: 1, Precedence: 1, Access: true, ChooseTEID: true, FAR: 1}.IE(),
		client.FAR{ID: 1, Action: pfcp.ActionFORW, Dest: pfcp.InterfaceCore}.IE()); err == nil || client.CauseOf(r) != pfcp.CauseNoResources {
		t.Fatalf("establishment while draining: %v", err)
	}
	if out := l.d.cli("view", "upf1", "sessions"); !strings.Contains(out, "49") { // 0x31
		t.Fatalf("the SMF's session went before the SMF released it:\n%s", out)
	}
	r, err := l.smf.Request(&pfcp.Message{Type: pfcp.AssociationReleaseRequest, IEs: pfcp.IEs{l.smf.Node.IE()}}, 5*time.Second)
	if err != nil || client.CauseOf(r) != pfcp.CauseAccepted {
		t.Fatalf("release: %v", err)
	}
	if out := l.d.cli("view", "upf1", "associations"); strings.Contains(out, "127.0.0.1") {
		t.Fatalf("association left after the release:\n%s", out)
	}
}
