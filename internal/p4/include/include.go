// Package include embeds the P4 system headers edgenf ships (core.p4,
// v1model.p4, psa.p4) so that #include <core.p4>, <v1model.p4> and
// <psa.p4> (or p4c's "bmv2/psa.p4") work without p4c.
package include

import (
	"embed"
	"io/fs"
)

//go:embed p4include/*.p4 p4include/bmv2/*.p4
var files embed.FS

// FS holds core.p4, v1model.p4 and psa.p4 at its root (bmv2/psa.p4
// includes psa.p4).
var FS fs.FS

func init() {
	sub, err := fs.Sub(files, "p4include")
	if err != nil {
		panic(err)
	}
	FS = sub
}
