package sandbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
)

func TestCheckFilesRefusesWhatCannotBeCreated(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name  string
		files map[string]string
		field string
		msg   string
	}{
		{"reserved prefix", map[string]string{".acr-tmp-x": ""}, "files..acr-tmp-x", "reserves"},
		{"reserved prefix in a directory", map[string]string{"d/.acr-tmp-1/f": ""}, "files.d/.acr-tmp-1/f", "reserves"},
		{"name too long", map[string]string{long: ""}, "files." + long, "at most 255"},
		{"path too long", map[string]string{strings.Repeat("abcdefgh/", 400) + "f": ""}, "", "bytes long"},
		{"file and directory", map[string]string{"a": "", "a/b": ""}, "files.a", "needs it to be a directory"},
		{"deeper conflict", map[string]string{"a/b": "", "a/b/c/d": ""}, "files.a/b", "needs it to be a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFiles(tc.files)
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			if tc.field != "" {
				assert.Equal(t, tc.field, fe.Path)
			}
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	require.NoError(t, CheckFiles(map[string]string{"a/b": "", "a/c": "", "ab": "", strings.Repeat("y", 255): ""}))
	require.NoError(t, CheckFiles(nil))
}
