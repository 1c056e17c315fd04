//go:build !crashpoints

package engine

// crashPoint is where a build with the crashpoints tag (the end-to-end
// tests' daemon, crashpoint_on.go) can kill itself, to test what a restart
// makes of a change it stopped in the middle of. In other builds it is
// nothing.
func crashPoint(string) {}
