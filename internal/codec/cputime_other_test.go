//go:build !unix

package codec_test

import "time"

// processCPU is not measured off unix; the benchmarks then report zero.
func processCPU() time.Duration { return 0 }
