// Package scenarios registers every benchmark scenario: the kernel baselines
// (in package scenario) and the edgenf ones. Import it for its side effects.
package scenarios

import _ "github.com/edgenf/edgenf/bench/scenario"
