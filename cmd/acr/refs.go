package main

import (
	"fmt"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// minRefDigits is the fewest hex digits of a ref's digest that name it: a
// shorter prefix names too many refs to be worth trying.
const minRefDigits = 4

// openRequest is one request a person can answer (an action waiting for
// approval, an uncertain effect, an amendment), as a ref given on the
// command line is matched against it.
type openRequest struct {
	Ref codec.Ref
	// What says what the request is, in a few words, for the list of
	// what is pending that a ref naming nothing gets back.
	What string
}

// matchRequest finds the one open request arg names: its whole ref, a
// prefix of it of at least kind:sha256: and minRefDigits digits, or a bare
// prefix of its digest (lower-case hex, at least minRefDigits digits).
// Refs are case-sensitive: an upper-cased one names nothing. A ref that
// names none of them, or more than one, is bad input (65), and the error
// lists what is pending so that the person can pick.
func matchRequest(arg string, open []openRequest, what string) (openRequest, error) {
	var match []openRequest
	if digits, ok := refDigits(arg); ok {
		for _, r := range open {
			if strings.HasPrefix(string(r.Ref), arg) || (digits == arg && strings.HasPrefix(r.Ref.Hex(), digits)) {
				match = append(match, r)
			}
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return openRequest{}, dataf("%s names no pending %s; %s", arg, what, pendingList(open, what))
	}
	return openRequest{}, dataf("%s matches %d pending %ss; give more of the ref; %s", arg, len(match), what, pendingList(open, what))
}

// refDigits checks the form of a ref given on the command line and
// returns its hex digits: "kind:sha256:HEX" or a bare "HEX", HEX being at
// least minRefDigits lower-case hex digits.
func refDigits(arg string) (string, bool) {
	digits := arg
	if i := strings.LastIndex(arg, ":sha256:"); i >= 0 {
		digits = arg[i+len(":sha256:"):]
		if kind := arg[:i]; kind == "" || strings.ToLower(kind) != kind || strings.ContainsAny(kind, ": ") {
			return "", false
		}
	}
	if len(digits) < minRefDigits || len(digits) > 64 {
		return "", false
	}
	for _, c := range digits {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return digits, true
}

// pendingList says what is pending, for an error about a ref that names
// none of it.
func pendingList(open []openRequest, what string) string {
	if len(open) == 0 {
		return fmt.Sprintf("the run has no pending %s (acr status shows what it waits for)", what)
	}
	lines := make([]string, len(open))
	for i, r := range open {
		lines[i] = "  " + string(r.Ref) + "  " + r.What
	}
	return "pending:\n" + strings.Join(lines, "\n")
}
