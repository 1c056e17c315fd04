package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// writeMan writes edgenfd(8) in roff from the flag set, so the page never
// drifts from the flags (`make install` and `make deb` install it).
func writeMan(w io.Writer, fs *flag.FlagSet) {
	esc := func(s string) string { return strings.NewReplacer(`\`, `\e`, "-", `\-`, "'", `\(aq`).Replace(s) }
	fmt.Fprint(w, `.TH EDGENFD 8 "" "edgenf" "edgenf manual"
.SH NAME
edgenfd \- the edgenf daemon: network functions in the Linux kernel (eBPF)
.SH SYNOPSIS
.B edgenfd
[\fIflags\fR]
.SH DESCRIPTION
edgenfd owns the desired state of an edgenf site: cubes (instances of network functions),
their ports and peers, transparent attachments and NF tables. It keeps the kernel's eBPF
programs and maps in line with that state, persists it atomically, and serves the REST API
on a unix socket readable by root only (optionally on TCP with bearer tokens), Prometheus
metrics at /metrics, and, with \fB\-p4rt\-listen\fR, P4Runtime for p4 cubes.
.PP
Programs, maps and links are pinned under the bpffs directory: when edgenfd stops or dies,
traffic keeps flowing, and a restarted edgenfd takes up exactly where it was.
.PP
\fBedgenfd \-check\fR reports whether this machine can run edgenf, changing nothing;
\fBedgenf doctor\fR does the same and asks the running daemon too.
.SH OPTIONS
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, ".TP\n.B \\-%s", esc(f.Name))
		if name != "" {
			fmt.Fprintf(w, " \\fI%s\\fR", esc(name))
		}
		fmt.Fprintf(w, "\n%s", esc(usage))
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default: %s)", esc(f.DefValue))
		}
		fmt.Fprintln(w)
	})
	fmt.Fprint(w, `.SH ENVIRONMENT
.TP
.B EDGENF_TC_ATTACH
tcx, classic or auto: how TC programs attach, when \fB\-tc\-attach\fR is not given.
.TP
.B EDGENF_CLANG
the clang that compiles P4 programs (default: clang, else clang\-14 ... clang\-19 on PATH).
.SH FILES
.TP
.I /run/edgenf/edgenf.sock
the API socket
.TP
.I /var/lib/edgenf/state.json
the desired state (and its journal beside it)
.TP
.I /sys/fs/bpf/edgenf
pinned programs, maps and links
.SH SEE ALSO
.BR edgenf (1),
.BR tc (8),
.BR bpftool (8)
`)
}
