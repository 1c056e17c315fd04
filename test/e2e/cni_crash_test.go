package e2e

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/netlab"
	"github.com/edgenf/edgenf/internal/testenv"
)

// TestCNICrashAfterJournalKeepsEndpoints: a pod's ADD and DEL are made
// durable by appending the port's cube and the endpoint to the state
// journal, one transaction, not by rewriting the state file. A daemon
// killed before the journal is folded into the state file has every
// endpoint the journal holds when it restarts, and pods reach each other
// through them; one killed right after journalling an ADD (before it
// answered the plugin) has that endpoint too, which the runtime's DEL of
// the failed ADD then removes; a DEL journalled before the kill stays done.
func TestCNICrashAfterJournalKeepsEndpoints(t *testing.T) {
	testenv.E2E(t)
	lab := netlab.NewT(t)
	d := startDaemon(t)
	node := newChainNode(t, lab, d, red)
	r := newCNIRuntime(t, d, node.conflist("edge", t.TempDir(), d.socket))
	pods := makePods(t, lab, "red", 0, 3)
	for _, p := range pods[:2] {
		if err := r.add(p); err != nil {
			t.Fatalf("ADD %s: %v", p, err)
		}
	}
	want := d.endpoints()

	// Killed with the two ADDs in the journal only.
	d.kill()
	d.start()
	if eps := d.endpoints(); len(eps) != 2 || endpointOf(eps, pods[0].id) == "" || endpointOf(eps, pods[1].id) == "" {
		t.Fatalf("after a kill: endpoints %v, want %v", eps, want)
	}
	reaches(t, pods[0], pods[1].ip(4))

	// Killed once the third pod's ADD is journalled, before it answered.
	d.stop()
	d.env = []string{"EDGENF_CRASH_AT=change-journalled"}
	d.start()
	if err := r.add(pods[2]); err == nil {
		t.Fatalf("ADD %s succeeded although the daemon was to crash", pods[2])
	}
	d.crashed()
	d.env = nil
	d.start()
	eps := d.endpoints()
	if len(eps) != 3 || endpointOf(eps, pods[2].id) == "" {
		t.Fatalf("after the crash in ADD: endpoints %v, want the 3 journalled", eps)
	}
	// The runtime deletes what a failed ADD left, then adds the pod again.
	if err := r.del(pods[2]); err != nil {
		t.Fatalf("DEL of the failed ADD: %v", err)
	}
	if eps = d.endpoints(); len(eps) != 2 || endpointOf(eps, pods[2].id) != "" {
		t.Fatalf("after DEL of the failed ADD: endpoints %v", eps)
	}
	if err := r.add(pods[2]); err != nil {
		t.Fatalf("ADD %s again: %v", pods[2], err)
	}
	reaches(t, pods[0], pods[2].ip(4))

	// Killed once the second pod's removal is journalled.
	second := endpointOf(d.endpoints(), pods[1].id)
	d.crashDuring("change-journalled", "endpoint", "del", second)
	eps = d.endpoints()
	if len(eps) != 2 || eps[second] != nil {
		t.Fatalf("after the crash in DEL: endpoints %v, want 2 without %s", eps, second)
	}
	if out := d.cli("get", "ports", "redbr"); strings.Contains(out, second) {
		t.Errorf("the deleted endpoint's port is back after the restart:\n%s", out)
	}
	cannotReach(t, pods[0], pods[1].ip(4))
	reaches(t, pods[2], pods[0].ip(4))
}
