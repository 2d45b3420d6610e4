package disk

import (
	"fmt"
	"os"
	"syscall"
)

// Fsync makes f's data and metadata durable, like f.Sync, but without
// telling the Go scheduler that the goroutine is in a system call.
//
// The reason is measured, not stylistic. A cycle runs two fsyncs at once
// (the ledger's on one goroutine, the effect's file on another) and leaves
// a third running while it computes. Through f.Sync, every fsync that
// outlasts 20µs while the other core is busy makes the runtime's monitor
// take the processor away from the blocked thread and wake another, and
// keeps the monitor polling every 20µs: on the side-by-side queue that
// doubled the process's context switches (from about 19 to 34 a cycle)
// and cost 13-20% more CPU, enough to cancel what running the fsyncs
// together gained (docs/PERFORMANCE.md). A raw fsync keeps its processor
// until the disk answers, which is what the cycle wants: there is nothing
// else to run meanwhile.
//
// The cost is that a fsync which stalls also holds its processor, and a
// stop-the-world garbage collection waits for it. acr's fsyncs are what a
// cycle waits for anyway, so that delays nothing the cycle would not.
func Fsync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		for {
			_, _, errno = syscall.RawSyscall(syscall.SYS_FSYNC, fd, 0, 0)
			if errno != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	if errno != 0 {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: errno}
	}
	return nil
}
