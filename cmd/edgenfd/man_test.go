package main

import (
	"flag"
	"strings"
	"testing"
)

// TestFlagArgumentNamesAreWords: flag.PrintDefaults and the man page take a
// back-quoted word of a usage text as the flag's argument name, so a quoted
// command in a usage ("as `edgenf apply -f` takes") printed
// "-apply-file edgenf apply -f" instead of "-apply-file file".
func TestFlagArgumentNamesAreWords(t *testing.T) {
	fs := flag.NewFlagSet("edgenfd", flag.ContinueOnError)
	var tcp tcpFlags
	var influx influxFlags
	var e estimateFlags
	tcp.register(fs)
	influx.register(fs)
	e.register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if name, _ := flag.UnquoteUsage(f); strings.ContainsAny(name, " -") {
			t.Errorf("-%s: argument name %q is not a word", f.Name, name)
		}
	})
}
