package codec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnder: an element's error goes under the element's place, whatever
// field (or none) it names.
func TestUnder(t *testing.T) {
	plain := errors.New("bad")
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"a field of the element", &FieldError{Path: "find", Err: plain}, "field fixes[0].find: bad"},
		{"the element itself", &FieldError{Err: plain}, "field fixes[0]: bad"},
		{"an error without a field", plain, "field fixes[0]: bad"},
		{"a wrapped field error", fmt.Errorf("check: %w", &FieldError{Path: "argv", Err: plain}), "field fixes[0].argv: bad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Under("fixes[0]", c.err)
			assert.EqualError(t, err, c.want)
			var fe *FieldError
			assert.True(t, errors.As(err, &fe))
			assert.ErrorIs(t, err, plain)
		})
	}
}
