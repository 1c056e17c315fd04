package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFileRateQuotasChecked: a token file whose tenant or default
// rate quotas are out of range is refused, naming the place and the reason.
func TestTokenFileRateQuotasChecked(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tokens.json")
	for _, c := range []struct{ file, want string }{
		{`{"tokens":[{"token":"0123456789abcdef0"}],"tenants":[{"name":"red","quota":{"punt_burst":0}}]}`,
			"tenants[0]: quota.punt_burst: a burst of 0 lets nothing through: want at least 1 (a rate of 0 refuses everything)"},
		{`{"tokens":[{"token":"0123456789abcdef0"}],"default_quota":{"injects_per_second":10000001}}`,
			"default_quota: quota.injects_per_second: limit 10000001 a second is more than 10000000"},
	} {
		if err := os.WriteFile(f, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadTokens(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.file, err, c.want)
		}
	}
}
