package backend

import (
	"github.com/edgenf/edgenf/internal/p4/sema"
)

// arch is what differs between the architectures the backend generates
// (v1model, PSA): how the parameters of the package's blocks bind to the
// per-packet state, which blocks are the parsers and deparsers, and the
// pipeline function that runs the blocks and sends the frame. Everything
// else (statements, tables, externs, parsing and deparsing) is shared.
type arch interface {
	// bind declares the per-packet state of the blocks' parameters and
	// binds them to it; false after an error.
	bind(g *gen, blocks []sema.Entity) bool
	// stages are the parsers, in the order they are generated, and the
	// deparsers, each with the name of its C function.
	stages(blocks []sema.Entity) ([]parserStage, map[*sema.Control]string)
	// pipeline generates p4_pipeline, the cube's entry point.
	pipeline(g *gen, blocks []sema.Entity)
}

// parserStage is a parser of the pipeline and its C function.
type parserStage struct {
	parser *sema.Parser
	fn     string
}

func archOf(name string) arch {
	switch name {
	case "v1model":
		return v1model{}
	case "psa":
		return psa{}
	}
	return nil
}
