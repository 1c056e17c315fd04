package accuracy

import (
	"testing"

	"github.com/edgenf/edgenf/internal/testenv/leakcheck"
)

// TestMain fails the package's tests if they leave an engine's kernel
// objects behind (leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m) }
