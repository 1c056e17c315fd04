// Package include embeds the P4 system headers edgenf ships (core.p4,
// v1model.p4) so that #include <core.p4> and <v1model.p4> work without p4c.
package include

import (
	"embed"
	"io/fs"
)

//go:embed p4include/*.p4
var files embed.FS

// FS holds core.p4 and v1model.p4 at its root.
var FS fs.FS

func init() {
	sub, err := fs.Sub(files, "p4include")
	if err != nil {
		panic(err)
	}
	FS = sub
}
