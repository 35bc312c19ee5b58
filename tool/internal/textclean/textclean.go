// Package textclean cleans the free text the embedded tools store: what a
// model or a user wrote, with the control characters and stray white
// space that must not reach a database or a reply taken out.
package textclean

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text drops control characters other than newline and tab, and invalid
// UTF-8, and trims the ends.
func Text(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r == utf8.RuneError || unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// Line is Text with every run of white space made one space.
func Line(s string) string { return strings.Join(strings.Fields(Text(s)), " ") }
