// Package all registers every built-in NF type; the daemon imports it.
package all

import (
	_ "github.com/edgenf/edgenf/internal/nf/bridge"
	_ "github.com/edgenf/edgenf/internal/nf/capture"
	_ "github.com/edgenf/edgenf/internal/nf/ddos"
	_ "github.com/edgenf/edgenf/internal/nf/firewall"
	_ "github.com/edgenf/edgenf/internal/nf/lb"
	_ "github.com/edgenf/edgenf/internal/nf/monitor"
	_ "github.com/edgenf/edgenf/internal/nf/nat"
	_ "github.com/edgenf/edgenf/internal/nf/nat64"
	_ "github.com/edgenf/edgenf/internal/nf/p4"
	_ "github.com/edgenf/edgenf/internal/nf/portfwd"
	_ "github.com/edgenf/edgenf/internal/nf/router"
	_ "github.com/edgenf/edgenf/internal/nf/slicer"
	_ "github.com/edgenf/edgenf/internal/nf/upf"
)
