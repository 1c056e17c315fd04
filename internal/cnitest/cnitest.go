// Package cnitest runs CNI plugins as a node's container runtime would, for
// tests and benchmarks: through libcni, inside the node's network
// namespace.
package cnitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// NSExec is a libcni executor that runs plugins inside a network namespace
// (a "node" of a test), given by path ("" runs them where the caller is).
type NSExec struct {
	version.PluginDecoder
	NetNS string
}

// ExecPlugin runs a plugin and returns its stdout; a plugin's failure is
// its CNI error (JSON on stdout), as invoke.RawExec reports it.
func (e *NSExec) ExecPlugin(ctx context.Context, plugin string, stdin []byte, environ []string) ([]byte, error) {
	argv := []string{plugin}
	if e.NetNS != "" {
		argv = []string{"nsenter", "--net=" + e.NetNS, plugin}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, stderr bytes.Buffer
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = environ, bytes.NewReader(stdin), &out, &stderr
	if err := cmd.Run(); err != nil {
		var te types.Error
		if json.Unmarshal(out.Bytes(), &te) == nil && te.Msg != "" {
			return nil, &te
		}
		return nil, fmt.Errorf("%s: %v: %s%s", plugin, err, out.String(), stderr.String())
	}
	return out.Bytes(), nil
}

// FindInPath finds a plugin in the CNI path.
func (e *NSExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}
