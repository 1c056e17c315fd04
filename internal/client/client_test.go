package client

import (
	"strings"
	"testing"

	"github.com/edgenf/edgenf/internal/tlsauth"
)

// TestOpenChecksURLAndTLSFiles: TLS files without an https server, or a URL
// that is not http(s), are refused before any call.
func TestOpenChecksURLAndTLSFiles(t *testing.T) {
	ca := tlsauth.ClientFiles{CA: "/nonexistent/ca.pem"}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{TLS: ca}, "give --server https://"},
		{Options{Server: "http://127.0.0.1:9400", TLS: ca}, "need an https:// URL"},
		{Options{Server: "127.0.0.1:9400"}, "want http://HOST:PORT"},
		{Options{Server: "ftp://x"}, "want http://HOST:PORT"},
		{Options{Server: "https://127.0.0.1:9400", TLS: ca}, "no such file"},
	} {
		if _, err := Open(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := New("", "not a url", "").Do("GET", "/v1/health", nil, nil); err == nil || !strings.Contains(err.Error(), "want http://") {
		t.Errorf("a bad URL: %v", err)
	}
	if _, err := Open(Options{Server: "https://127.0.0.1:9400"}); err != nil {
		t.Errorf("https with the system's roots: %v", err)
	}
}
