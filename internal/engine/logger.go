package engine

import "log/slog"

// Logger is the daemon's logger, which the engine logs to: the API logs
// what it does beside the engine's changes (a capture's start and end).
func (e *Engine) Logger() *slog.Logger { return e.log }
