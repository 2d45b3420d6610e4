package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/acr-project/acr/internal/state"
)

// MaxPageBytes bounds the page Render writes for a View from Aggregate
// with the default Options, whatever the length or content of the run:
// every list in the View is capped and every string clipped (see
// clip.go), and TestWorstCaseSize fills every cap with the
// longest values to check the sum.
const MaxPageBytes = 4 << 20

// pageSource is the page template. It is read-only: html/template parses
// it afresh for every Render.
//
//go:embed page.html.tmpl
var pageSource string

// Render writes the View as one self-contained HTML page.
func Render(w io.Writer, v *View) error {
	t, err := template.New("page").Funcs(template.FuncMap{
		"join":      func(ss []string) string { return strings.Join(ss, ", ") },
		"disp":      func(d state.Disposition) string { return dispName(int(d)) },
		"dispClass": dispClass,
		"decClass":  decClass,
		"int64":     func(n int) int64 { return int64(n) },
	}).Parse(pageSource)
	if err != nil {
		return fmt.Errorf("parse report template: %w", err)
	}
	if err := t.Execute(w, v); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}
