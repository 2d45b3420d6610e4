package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminal reports whether w is an interactive terminal and, if so, how
// many columns it has (0 when unknown). It is a field of app rather than a
// function called directly, so that a test can hand acr a buffer that
// claims to be a terminal.
type terminal func(w io.Writer) (isTerm bool, cols int)

// osTerminal asks the kernel for the window size of w's descriptor: only a
// terminal answers. A character-device check alone would take /dev/null
// (where cron jobs often send stdout) for a terminal.
func osTerminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok {
		return false, 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return false, 0
	}
	return true, int(ws.Col)
}

// colour reports whether terminal output may use ANSI colours: not when
// NO_COLOR is set to anything non-empty (no-color.org), and not on a
// terminal that declares itself dumb.
func (a *app) colour() bool {
	return a.getenv("NO_COLOR") == "" && a.getenv("TERM") != "dumb"
}

// liveTerminal reports whether stdout can take a line redrawn in place:
// a terminal that understands the clear-line sequence, and not --json.
func (a *app) liveTerminal() (bool, int) {
	if a.cfg.JSON || a.getenv("TERM") == "dumb" {
		return false, 0
	}
	return a.term(a.stdout)
}
