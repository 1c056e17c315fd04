package monitor

import "github.com/edgenf/edgenf/internal/cube"

type controller struct{}

// Sync has nothing to write: the monitor has no settings.
func (controller) Sync(cube.Handle, *cube.Cube) error { return nil }
