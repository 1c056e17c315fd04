package slicer

import (
	"testing"

	"github.com/edgenf/edgenf/internal/testenv/leakcheck"
)

// TestMain fails the package's tests if they leave an engine's kernel
// objects behind (leakcheck): most of them open engines.
func TestMain(m *testing.M) { leakcheck.Main(m) }
