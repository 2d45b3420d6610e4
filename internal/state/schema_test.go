package state

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
)

// TestFormatTime: a reading is written in UTC, to the whole second, so
// that the same instant is always the same string.
func TestFormatTime(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	cases := []struct {
		name string
		in   time.Time
		want string
	}{
		{"UTC", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), "2026-01-02T15:04:05Z"},
		{"another zone is written in UTC", time.Date(2026, 1, 2, 16, 4, 5, 0, paris), "2026-01-02T15:04:05Z"},
		{"a fraction is cut, not rounded", time.Date(2026, 1, 2, 15, 4, 5, 999_999_999, time.UTC), "2026-01-02T15:04:05Z"},
		{"across midnight in UTC", time.Date(2026, 1, 1, 0, 30, 0, 0, paris), "2025-12-31T23:30:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatTime(tc.in))
		})
	}
}

// TestParseTime accepts any RFC 3339 reading, in UTC, and refuses the
// rest with a message that says what it wants.
func TestParseTime(t *testing.T) {
	cases := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), true},
		{"2026-01-02T16:04:05+01:00", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), true},
		{"2026-01-02T15:04:05.5Z", time.Date(2026, 1, 2, 15, 4, 5, 500_000_000, time.UTC), true},
		{"", time.Time{}, false},
		{"2026-01-02", time.Time{}, false},
		{"2026-01-02 15:04:05Z", time.Time{}, false},
		{"2026-01-02T15:04:05", time.Time{}, false},
		{"2026-13-02T15:04:05Z", time.Time{}, false},
		{"1767366245", time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTime(tc.in)
			if !tc.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "RFC 3339")
				assert.Contains(t, err.Error(), "\""+tc.in+"\"")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, time.UTC, got.Location())
		})
	}
}

// FuzzParseTime: a reading ParseTime accepts, written again by FormatTime,
// parses to the same instant to the second, and is written the same way.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-01-02T15:04:05Z", "2026-01-02T16:04:05+01:00", "2026-01-02T15:04:05.123456789-07:30", "9999-12-31T23:00:00-02:00", "0000-01-01T00:00:00+01:00", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s)
		if err != nil {
			return
		}
		if got.Year() < 0 || got.Year() > 9999 {
			// RFC 3339 has four-digit years: 9999-12-31T23:00:00-02:00 is
			// a valid reading whose UTC year (10000) it cannot write.
			return
		}
		out := FormatTime(got)
		back, err := ParseTime(out)
		if err != nil {
			t.Fatalf("ParseTime(%q) accepted, but its FormatTime %q does not parse: %v", s, out, err)
		}
		if !back.Equal(got.Truncate(time.Second)) || FormatTime(back) != out {
			t.Fatalf("%q -> %q -> %v, want %v", s, out, back, got.Truncate(time.Second))
		}
	})
}

// TestDispositionText: the seven names and nothing else cross the JSON
// boundary; the zero value and values past the last are errors, never a
// name.
func TestDispositionText(t *testing.T) {
	names := map[Disposition]string{Continue: "CONTINUE", Idle: "IDLE", Sleep: "SLEEP", WaitApproval: "WAIT_APPROVAL",
		Deferred: "DEFERRED", Stopped: "STOPPED", Faulted: "FAULTED"}
	require.Len(t, Dispositions(), len(names))
	for _, d := range Dispositions() {
		want, ok := names[d]
		require.True(t, ok, "Dispositions lists %d, which has no name", d)
		assert.Equal(t, want, d.String())
		b, err := d.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, want, string(b))
		var back Disposition
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, d, back)
		enc, err := codec.Marshal(struct {
			D Disposition `json:"d"`
		}{d})
		require.NoError(t, err)
		assert.Equal(t, `{"d":"`+want+`"}`, string(enc))
	}
	for _, d := range []Disposition{DispositionInvalid, Faulted + 1, 255} {
		_, err := d.MarshalText()
		assert.Error(t, err, "%d", uint8(d))
		assert.True(t, strings.HasPrefix(d.String(), "Disposition("), d.String())
	}
	for _, s := range []string{"", "continue", "Continue", " IDLE", "IDLE ", "WAIT-APPROVAL", "Disposition(1)", "ESCALATE", "DEFER"} {
		var d Disposition
		err := d.UnmarshalText([]byte(s))
		require.Error(t, err, "%q", s)
		assert.Equal(t, DispositionInvalid, d, "a refused name leaves the value alone")
		assert.Contains(t, err.Error(), "unknown loop disposition")
	}
}

// FuzzDispositionText: a name UnmarshalText accepts is written back as the
// same bytes.
func FuzzDispositionText(f *testing.F) {
	for _, s := range []string{"CONTINUE", "FAULTED", "", "idle"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Disposition
		if d.UnmarshalText(b) != nil {
			return
		}
		out, err := d.MarshalText()
		if err != nil || string(out) != string(b) {
			t.Fatalf("%q accepted as %d, written as %q (%v)", b, uint8(d), out, err)
		}
	})
}

func TestDispositionTerminal(t *testing.T) {
	for _, d := range Dispositions() {
		assert.Equal(t, d == Stopped || d == Faulted, d.Terminal(), d.String())
	}
	assert.False(t, DispositionInvalid.Terminal())
}

// TestLedgerFormat: format 1 is stored as the field's absence, so that a
// run older than the field keeps its bytes, and every other format as
// itself.
func TestLedgerFormat(t *testing.T) {
	cases := []struct {
		set        LedgerFormat
		stored     LedgerFormat
		inJSON     bool
		readBackAs LedgerFormat
	}{
		{LedgerFormat1, 0, false, LedgerFormat1},
		{LedgerFormat2, LedgerFormat2, true, LedgerFormat2},
		{LedgerFormat3, LedgerFormat3, true, LedgerFormat3},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint("format ", int(tc.set)), func(t *testing.T) {
			rs := RunState{LedgerFormat: LedgerFormat3, LoopDisposition: Idle}
			rs.SetFormat(tc.set)
			assert.Equal(t, tc.stored, rs.LedgerFormat)
			assert.Equal(t, tc.readBackAs, rs.Format())
			b, err := codec.Marshal(rs)
			require.NoError(t, err)
			assert.Equal(t, tc.inJSON, strings.Contains(string(b), `"ledger_format"`), "%s", b)
		})
	}
	assert.Equal(t, LedgerFormat1, (&RunState{}).Format(), "a run state without the field is format 1")
	assert.Equal(t, LedgerFormat3, CurrentLedgerFormat)
}

// TestVerdicts: only ran and not_ran are a word on an uncertain effect;
// approve and deny answer a request.
func TestVerdicts(t *testing.T) {
	for v, want := range map[string]bool{VerdictRan: true, VerdictNotRan: true, VerdictApprove: false, VerdictDeny: false, "": false, "RAN": false, "not-ran": false} {
		assert.Equal(t, want, Resolves(v), "%q", v)
	}
	assert.True(t, PendingApproval{Key: "k"}.Incident())
	assert.False(t, PendingApproval{Ref: "act:sha256:00"}.Incident(), "an uncertain effect recorded before incidents has no key")
}

// TestLists: the documents an amendment replaces and the wake sources are
// each listed once, as the names the documents and the seed use.
func TestLists(t *testing.T) {
	assert.ElementsMatch(t, []string{AmendContract, AmendGoal, AmendEnvironment}, AmendTargets())
	seen := map[string]bool{}
	for _, s := range WakeSources() {
		assert.False(t, seen[s], "%s listed twice", s)
		seen[s] = true
		assert.Regexp(t, `^[a-z]+(_[a-z]+)*$`, s)
	}
	for _, s := range []string{"budget_replenished", "manual_resume", "commitment_deadline_due", "approval_resolved"} {
		assert.True(t, seen[s], "%s missing: the kernel reads it", s)
	}
}
