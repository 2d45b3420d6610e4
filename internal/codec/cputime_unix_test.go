//go:build unix

package codec_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the test process has used.
// Benchmarks report it per operation besides wall time because the
// machines they run on are shared: wall time counts the moments another
// process held the core, CPU time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
