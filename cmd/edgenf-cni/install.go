package main

// `edgenf-cni install`: what the DaemonSet's init container does on each
// node. It copies the plugin (and IPAM plugins the node lacks) into the
// runtime's CNI bin directory and writes the network configuration list,
// each file atomically (a runtime reading the directory never sees half a
// file), after checking the configuration would be accepted.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"

	"github.com/edgenf/edgenf/internal/state"
)

func install(argv []string) error {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	binDir := fs.String("bin-dir", "/host/opt/cni/bin", "the node's CNI plugin directory (mounted)")
	confDir := fs.String("conf-dir", "/host/etc/cni/net.d", "the node's CNI configuration directory (mounted)")
	conflist := fs.String("conflist", "/etc/edgenf/cni/10-edgenf.conflist", "the network configuration list to install (from a ConfigMap)")
	plugins := fs.String("ipam-plugins", "", "comma-separated IPAM plugin binaries to copy where the node lacks them (e.g. /usr/lib/cni/host-local)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	b, err := os.ReadFile(*conflist)
	if err != nil {
		return err
	}
	if err := checkConflist(b); err != nil {
		return fmt.Errorf("%s: %w", *conflist, err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := copyFile(self, filepath.Join(*binDir, "edgenf-cni"), 0o755, true); err != nil {
		return err
	}
	if *plugins != "" {
		for _, p := range strings.Split(*plugins, ",") {
			if err := copyFile(p, filepath.Join(*binDir, filepath.Base(p)), 0o755, false); err != nil {
				return err
			}
		}
	}
	if err := state.WriteFileAtomic(filepath.Join(*confDir, filepath.Base(*conflist)), b, 0o644); err != nil {
		return err
	}
	fmt.Printf("installed %s and %s\n", filepath.Join(*binDir, "edgenf-cni"), filepath.Join(*confDir, filepath.Base(*conflist)))
	return nil
}

// checkConflist accepts a configuration list whose edgenf-cni plugin
// configurations parse.
func checkConflist(b []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return err
	}
	if _, ok := top["plugins"]; !ok {
		return errors.New("a single network configuration: want a list (.conflist) with a \"plugins\" array")
	}
	cl, err := libcni.ConfListFromBytes(b)
	if err != nil {
		return err
	}
	found := false
	for i, p := range cl.Plugins {
		if p.Network.Type != "edgenf-cni" {
			continue
		}
		found = true
		// the plugin sees its configuration with the list's name and version
		inj, err := libcni.InjectConf(p, map[string]interface{}{"name": cl.Name, "cniVersion": cl.CNIVersion})
		if err != nil {
			return err
		}
		if _, err := parseConf(inj.Bytes); err != nil {
			return fmt.Errorf("plugins[%d]: %w", i, err)
		}
	}
	if !found {
		return errors.New("no plugin of type edgenf-cni in the list")
	}
	return nil
}

// copyFile copies src to dst atomically; without replace, an existing dst
// is kept.
func copyFile(src, dst string, mode os.FileMode, replace bool) error {
	if !replace {
		if _, err := os.Stat(dst); err == nil {
			return nil
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, in); err != nil {
		return err
	}
	return state.WriteFileAtomic(dst, buf.Bytes(), mode)
}
