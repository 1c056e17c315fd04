package conformance

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Failure classes that are not derived from a message.
const (
	ClassTimeout  = "timeout"
	ClassCrash    = "crash (panic)"
	ClassHarness  = "harness"
	ClassPackets  = "packets differ"
	ClassShort    = "packets differ: frames shorter than 14 bytes"
	ClassUnknown  = "other"
	classLoad     = "load: "
	classCompile  = "clang rejects the generated C"
	classFrontEnd = "front end: "
	classSTF      = "STF: "
)

var (
	// "prog.p4:12:3: error: msg" (a P4 diagnostic; the file may carry a directory)
	diagRE = regexp.MustCompile(`^(?:error: )?\S+\.p4:\d+:\d+: error: (.*)$`)
	// "test.stf:9: msg" (a positioned STF failure or runner error)
	stfRE = regexp.MustCompile(`^(?:error: )?\S+\.stf:\d+: (.*)$`)
	// "port 1: length 14, want 6 exactly"
	shortRE = regexp.MustCompile(`length 14, want ([0-9]|1[0-3])\b`)
	// names in messages that differ from program to program
	namedRE = regexp.MustCompile(`\b(of type|returning|extern function|lookahead of|header field|has type|symbol) "?[A-Za-z_][\w.<>\[\]]*"?`)
	numRE   = regexp.MustCompile(`\b\d+\b`)
)

// Classify reads the output of a failed edgenf run: the class the failure
// belongs to, and its first error on one line.
func Classify(output string, timedOut bool, limit time.Duration) (class, first string) {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	first = firstError(lines)
	switch {
	case timedOut:
		return ClassTimeout, fmt.Sprintf("no result within %s", limit)
	case strings.Contains(output, "panic: ") || strings.Contains(output, "goroutine "):
		for _, l := range lines {
			if strings.HasPrefix(l, "panic: ") {
				return ClassCrash, strings.TrimSpace(l)
			}
		}
		return ClassCrash, first
	}
	switch msg := first; {
	case strings.Contains(msg, "check(s) failed"):
		// the first failing check says how
		for _, l := range lines[1:] {
			if m := stfRE.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				first = strings.TrimSpace(l)
				if shortRE.MatchString(m[1]) {
					return ClassShort, first
				}
				return ClassPackets, first
			}
		}
		return ClassPackets, first
	case diagRE.MatchString(msg):
		m := diagRE.FindStringSubmatch(msg)
		return frontEndClass(m[1]), first
	case stfRE.MatchString(msg):
		m := stfRE.FindStringSubmatch(msg)
		return classSTF + general(m[1]), first
	case strings.Contains(msg, "loading the program"):
		switch {
		case strings.Contains(msg, "unsatisfied program reference"):
			return classLoad + "unsatisfied program reference", first
		case strings.Contains(msg, "verifier"), strings.Contains(msg, "permission denied"), strings.Contains(msg, "invalid argument"):
			return classLoad + "the verifier rejects the program", first
		}
		return classLoad + general(strings.TrimPrefix(msg, "error: loading the program: ")), first
	case strings.Contains(msg, "clang"), strings.Contains(msg, ".c:"):
		return classCompile, first
	case strings.Contains(msg, "architecture"):
		return classFrontEnd + general(strings.TrimPrefix(msg, "error: ")), first
	case strings.Contains(msg, "BPF_PROG_TEST_RUN"):
		return classSTF + "the kernel refuses the test run", first
	}
	return ClassUnknown, first
}

// frontEndClass groups a P4 diagnostic: "unsupported: X" by feature, the
// rest as type or syntax errors of our front end.
func frontEndClass(msg string) string {
	if f, ok := strings.CutPrefix(msg, "unsupported: "); ok {
		f, _, _ = strings.Cut(f, " (not yet implemented")
		return "unsupported: " + general(f)
	}
	if strings.HasPrefix(msg, "expected ") || strings.HasPrefix(msg, "unexpected ") {
		return classFrontEnd + "syntax not parsed"
	}
	if strings.Contains(msg, "#include") || strings.Contains(msg, "preprocessor") || strings.Contains(msg, "macro") {
		return classFrontEnd + "preprocessor"
	}
	return classFrontEnd + general(msg)
}

// general takes what is particular to one program out of a message.
func general(msg string) string {
	msg = namedRE.ReplaceAllString(msg, "$1 X")
	msg = numRE.ReplaceAllString(msg, "N")
	if len(msg) > 80 {
		msg = msg[:77] + "..."
	}
	return msg
}

// firstError is the first line that says what went wrong.
func firstError(lines []string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "error: ") || strings.HasPrefix(l, "panic: ") {
			return oneLine(l)
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			return oneLine(l)
		}
	}
	return "(no output)"
}

func oneLine(s string) string {
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}
