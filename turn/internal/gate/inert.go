package gate

import (
	"fmt"
	"strings"
	"unicode"
)

// Inert shows control characters (newlines included), bidirectional
// overrides and isolates, and other invisible format characters as
// escapes, so a value can neither fake the end of a confirmation nor
// display as other text than it holds.
func Inert(v string) string {
	clean := true
	for _, r := range v {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			clean = false
			break
		}
	}
	if clean {
		return v
	}
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
