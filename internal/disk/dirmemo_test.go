package disk

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSettled(t *testing.T) {
	fine := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	whole := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		changed  time.Time
		after    time.Duration
		expected bool
	}{
		{"fine timestamps, within a tick", fine, 40 * time.Millisecond, false},
		{"fine timestamps, at a tick", fine, 50 * time.Millisecond, false},
		{"fine timestamps, past a tick", fine, 51 * time.Millisecond, true},
		{"whole seconds, a second later", whole, time.Second, false},
		{"whole seconds, two seconds later", whole, 2 * time.Second, false},
		{"whole seconds, past two seconds", whole, 2*time.Second + time.Millisecond, true},
		{"milliseconds only, within two seconds", whole.Add(10 * time.Millisecond), time.Second, false},
		{"a clock behind the file system", fine, -time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.expected, Settled(tc.changed, tc.changed.Add(tc.after)))
		})
	}
}
