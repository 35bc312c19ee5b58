// Package jsonstr writes JSON strings without reflection, for the request
// bodies and rows built by hand on every turn.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// Append appends s to b as a JSON string and returns the
// extended slice. It escapes ", \, \b, \f, \n, \r and \t as such, other
// control characters and U+2028 and U+2029 as \uXXXX, and writes invalid
// UTF-8 as \ufffd, as encoding/json does; unlike encoding/json's default it
// leaves <, > and & as they are, since the text is not embedded in HTML.
// It is safe for concurrent use.
func Append(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendMarshaled appends s to b exactly as json.Marshal writes it: as
// Append does, and <, > and & as \u003c, \u003e and \u0026. A record
// whose text is searched for the forms json.Marshal gives a value (a
// secret to redact) is written with it, so that no value escapes the
// search by being written otherwise.
func AppendMarshaled(b []byte, s string) []byte { return appendString(b, s, true) }

func appendString(b []byte, s string, escapeHTML bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
