package capture

import (
	"context"
	"strings"
	"testing"
)

func TestCompileAsTcpdump(t *testing.T) {
	prog, err := Compile(context.Background(), "udp port 53")
	if err != nil {
		t.Skip(err) // no tcpdump: the e2e tests say so too
	}
	if len(prog) < 5 || prog[len(prog)-1].Op != 0x06 {
		t.Fatalf("program %v", prog)
	}
	if _, err := Compile(context.Background(), "host edgenf.invalid"); err == nil || !strings.Contains(err.Error(), "unknown host") {
		t.Fatalf("host name: %v, want it unresolved", err)
	}
	if _, err := Compile(context.Background(), "udp prot 53"); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Fatalf("bad expression: %v, want libpcap's syntax error", err)
	}
}

func TestCheckRefusesJumpsOut(t *testing.T) {
	if _, err := ParseDDD("2\n21 0 5 2048\n6 0 0 0\n"); err == nil {
		t.Fatal("jump past the end accepted")
	}
	if _, err := ParseDDD("1\n40 0 0 12\n"); err == nil {
		t.Fatal("program without a return accepted")
	}
	if _, err := ParseDDD("3\n40 0 0 12\n"); err == nil {
		t.Fatal("short program accepted")
	}
}
