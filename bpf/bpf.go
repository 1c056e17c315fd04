// Package bpf carries the framework's C headers inside the binary, so that
// code generated at run time (P4 programs) compiles on a machine without the
// source tree.
package bpf

import "embed"

// Headers holds include/edgenf/*.h; pass its extracted root to clang with -I.
//
//go:embed include
var Headers embed.FS
