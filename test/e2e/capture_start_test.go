package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgenf/edgenf/internal/nftest"
	"github.com/edgenf/edgenf/internal/testenv"
)

// captureStartBound is how long a capture on a Linux interface may take to
// start and take its first frame. The capture program verifies in
// milliseconds and a start takes 0.1-0.4 s on this 2-core machine under a
// load of 20; its filter machine once made the verifier walk 262,000
// instructions at TC, twice per start on an interface: 5-8 s on a quiet
// machine, 25-47 s on a loaded one.
const captureStartBound = 10 * time.Second

// A capture on the interface a chain's frames enter by, with a filter,
// starts and takes the first frame sent after the command starts within
// captureStartBound (a frame is sent every 50 ms until the capture ends);
// the daemon logs its start, with how long it took, and its end.
func TestCaptureOnInterfaceStartsPromptly(t *testing.T) {
	testenv.E2E(t)
	for _, at := range nftest.Attachments[:2] {
		t.Run(at.Name, func(t *testing.T) {
			d := startDaemonFor(t, at)
			_, a, b, ra, rb := twoHosts(t)
			buildChain(t, d, ra, rb, string(at.Hook))
			frames := knownFrames(t, a, b)
			dns, other := frames[0], frames[1] // UDP to port 53; UDP to 9999
			file := filepath.Join(t.TempDir(), "start.pcapng")
			var msg bytes.Buffer
			cmd := exec.Command(filepath.Join(binDir, "edgenf"), "--socket", d.socket, "capture", ra,
				"--direction", "in", "-c", "1", "-w", file, "udp", "port", "53")
			cmd.Stdout, cmd.Stderr = &msg, &msg
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
		wait:
			for {
				select {
				case err := <-exited:
					if err != nil {
						t.Fatalf("edgenf capture: %v\n%s", err, msg.String())
					}
					break wait
				case <-tick.C:
					if time.Since(start) > captureStartBound {
						cmd.Process.Kill()
						<-exited
						t.Fatalf("no frame captured %v after `edgenf capture %s` started (%s); daemon log:\n%s", captureStartBound, ra, msg.String(), d.log)
					}
					// one the filter refuses, then one it takes
					sendRawFrom(t, a, other, dns)
				}
			}
			t.Logf("capture on %s took its first frame %v after the command started", ra, time.Since(start).Round(time.Millisecond))
			if !strings.Contains(msg.String(), "1 packets captured at "+ra) {
				t.Errorf("capture said %q", msg.String())
			}
			if _, err := exec.LookPath("tshark"); err == nil {
				if got := tsharkFrames(t, file); len(got) != 1 || !bytes.Equal(got[0].raw, dns) {
					t.Errorf("the file holds %d frames (%v), want the one to port 53", len(got), got)
				}
			}
			logged := func(what string) bool {
				for _, l := range strings.Split(d.log.String(), "\n") {
					if strings.Contains(l, `msg="`+what+`"`) && strings.Contains(l, "point="+ra+" ") && strings.Contains(l, "hook="+string(at.Hook)) {
						return true
					}
				}
				return false
			}
			if !logged("capture started") {
				t.Errorf("the daemon did not log the capture's start:\n%s", d.log)
			}
			waitFor(t, "the daemon logs the capture's end", func() bool { return logged("capture ended") })
			d.waitCaptures(0)
		})
	}
}
