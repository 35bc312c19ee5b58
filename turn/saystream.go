package turn

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// toolField is what a JSON decision's "tool" says, as far as it was read.
type toolField int8

const (
	toolUnread   toolField = iota // not read yet
	toolNone                      // null or "": a plain reply
	toolProposed                  // a tool name
	toolBroken                    // the answer is not one JSON decision
)

// sayScanner reads a JSON decision as it arrives, piece by piece, and
// hands on the decoded text of its top-level "say" string while it is
// still being written; it notes what the top-level "tool" holds — a name
// in any "tool" key wins. Text before the object (from a backtick to the
// end of its line too, as the parser drops fence lines), nested objects and
// strings that merely contain "say" are skipped; only the first "say"
// counts. It reads the object's members by JSON's grammar: at the first
// byte out of it the scanner says nothing more and reads "tool" as
// toolBroken, for the parser may then read another object than this one.
type sayScanner struct {
	depth    int
	inString bool
	next     expect // at depth 1, what the grammar allows next
	literal  []byte // a bare value at depth 1 being read (null, a number)
	skipLine bool   // before the object, on a line with a backtick
	role     strRole
	key      []byte // the key being read
	valueOf  string // the top-level key whose value comes next
	escape   int8   // 0, 1 after '\\', 2..5 reading \uXXXX digits
	hex      rune
	high     rune // a high surrogate waiting for its low half
	tool     toolField
	toolName int  // bytes of the tool's name read
	sayDone  bool // the first "say" ended
	done     bool // the top-level object closed, or the grammar broke
	out      []byte
}

// expect is what JSON's grammar allows next among the object's members.
type expect int8

const (
	expFirstKey expect = iota // after "{": a key or "}"
	expKey                    // after ",": a key
	expColon                  // after a key
	expValue                  // after ":"
	expMore                   // after a value: "," or "}"
)

// strRole is what the string being read is.
type strRole int8

const (
	roleOther strRole = iota
	roleKey
	roleSay
	roleTool
)

// feed reads the next piece and returns the say text it completed (whole
// UTF-8 sequences only; the rest waits for the next piece).
func (sc *sayScanner) feed(piece string) string {
	for i := 0; i < len(piece) && !sc.done; i++ {
		switch {
		case sc.inString:
			sc.stringByte(piece[i])
		case sc.depth == 0:
			sc.beforeByte(piece[i])
		case sc.depth == 1:
			sc.memberByte(piece[i])
		default:
			sc.nestedByte(piece[i])
		}
	}
	n := completeUTF8(sc.out)
	// Bytes that are not UTF-8 (a provider that passed them on) go out as
	// U+FFFD: a channel may refuse a text that is not UTF-8 at all.
	said := strings.ToValidUTF8(string(sc.out[:n]), "\uFFFD")
	sc.out = append(sc.out[:0], sc.out[n:]...)
	return said
}

// broken ends the scan: what was not handed on yet never is.
func (sc *sayScanner) broken() {
	sc.done, sc.tool, sc.out = true, toolBroken, sc.out[:0]
}

// beforeByte reads one byte before the object.
func (sc *sayScanner) beforeByte(c byte) {
	switch {
	case c == '\n':
		sc.skipLine = false
	case sc.skipLine:
	case c == '`':
		sc.skipLine = true
	case c == '{':
		sc.depth, sc.next = 1, expFirstKey
	case c == '[':
		sc.broken() // an array, or prose the parser reads as JSON
	}
}

// memberByte reads one byte of the object's own members, outside strings.
func (sc *sayScanner) memberByte(c byte) {
	if sc.literal != nil {
		if isLiteralByte(c) && len(sc.literal) < 32 {
			sc.literal = append(sc.literal, c)
			return
		}
		sc.endLiteral()
		if sc.done {
			return
		}
	}
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r':
	case c == '"' && (sc.next == expFirstKey || sc.next == expKey):
		sc.inString, sc.role, sc.key = true, roleKey, sc.key[:0]
	case c == ':' && sc.next == expColon:
		sc.next = expValue
	case sc.next == expValue:
		sc.valueByte(c)
	case c == ',' && sc.next == expMore:
		sc.next, sc.valueOf = expKey, ""
	case c == '}' && (sc.next == expMore || sc.next == expFirstKey):
		sc.depth, sc.done = 0, true
	default:
		sc.broken()
	}
}

// valueByte reads the first byte of a member's value.
func (sc *sayScanner) valueByte(c byte) {
	switch {
	case c == '"':
		sc.inString, sc.role = true, roleOther
		switch {
		case sc.valueOf == "say" && !sc.sayDone:
			sc.role = roleSay
		case sc.valueOf == "tool":
			sc.role, sc.toolName = roleTool, 0
		}
	case c == '{' || c == '[':
		sc.depth = 2
	case isLiteralByte(c):
		sc.literal = append(sc.literal[:0:0], c)
	default:
		sc.broken()
	}
}

// endLiteral closes a bare value: null, true, false or a number. A
// "tool" that is not null is refused by the parser.
func (sc *sayScanner) endLiteral() {
	lit := string(sc.literal)
	sc.literal, sc.next = nil, expMore
	switch {
	case sc.valueOf == "tool" && lit == "null":
		if sc.tool == toolUnread {
			sc.tool = toolNone
		}
	case sc.valueOf == "tool", lit != "null" && lit != "true" && lit != "false" && !isNumber(lit):
		sc.broken()
	}
}

// nestedByte reads one byte inside a nested value, outside strings.
func (sc *sayScanner) nestedByte(c byte) {
	switch c {
	case '{', '[':
		sc.depth++
	case '}', ']':
		if sc.depth--; sc.depth == 1 {
			sc.next = expMore
		}
	case '"':
		sc.inString, sc.role = true, roleOther
	case '`':
		sc.broken() // a fence line the parser would drop
	}
}

func isLiteralByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// isNumber reports whether s is a JSON number.
func isNumber(s string) bool {
	return json.Valid([]byte(s)) && s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9')
}

// stringByte reads one byte inside a string; one JSON does not allow (a
// raw control character, an unknown escape) ends the scan.
func (sc *sayScanner) stringByte(c byte) {
	switch {
	case sc.escape == 1:
		sc.escape = 0
		sc.escaped(c)
	case sc.escape >= 2:
		v := hexValue(c)
		if v > 15 {
			sc.broken()
			return
		}
		sc.hex = sc.hex<<4 | rune(v)
		if sc.escape++; sc.escape == 6 {
			sc.escape = 0
			sc.char(sc.hex)
		}
	case c == '\\':
		sc.escape = 1
	case c == '"':
		sc.endString()
	case c < 0x20:
		sc.broken()
	default:
		sc.flushHigh()
		sc.raw(c)
	}
}

// escaped reads the letter after a backslash.
func (sc *sayScanner) escaped(c byte) {
	switch c {
	case 'u':
		sc.escape, sc.hex = 2, 0
	case 'n':
		sc.char('\n')
	case 't':
		sc.char('\t')
	case 'r':
		sc.char('\r')
	case 'b':
		sc.char('\b')
	case 'f':
		sc.char('\f')
	case '"', '\\', '/':
		sc.char(rune(c))
	default:
		sc.broken()
	}
}

// char adds a decoded character, joining surrogate halves.
func (sc *sayScanner) char(r rune) {
	if sc.high != 0 {
		high := sc.high
		sc.high = 0
		if utf16.IsSurrogate(r) && r >= 0xDC00 {
			sc.rune(utf16.DecodeRune(high, r))
			return
		}
		sc.rune(utf8.RuneError)
	}
	if r >= 0xD800 && r < 0xDC00 {
		sc.high = r
		return
	}
	if utf16.IsSurrogate(r) {
		r = utf8.RuneError // a low half alone
	}
	sc.rune(r)
}

func (sc *sayScanner) flushHigh() {
	if sc.high != 0 {
		sc.high = 0
		sc.rune(utf8.RuneError)
	}
}

func (sc *sayScanner) rune(r rune) {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	for _, c := range b[:n] {
		sc.raw(c)
	}
}

// raw adds one byte of the string to wherever its role sends it.
func (sc *sayScanner) raw(c byte) {
	switch sc.role {
	case roleKey:
		if len(sc.key) < 16 { // longer than any key of the contract
			sc.key = append(sc.key, c)
		}
	case roleSay:
		sc.out = append(sc.out, c)
	case roleTool:
		sc.toolName++
	}
}

func (sc *sayScanner) endString() {
	sc.flushHigh()
	sc.inString = false
	if sc.depth == 1 {
		sc.next = expMore
		if sc.role == roleKey {
			sc.next = expColon
		}
	}
	switch sc.role {
	case roleKey:
		sc.valueOf = string(sc.key)
	case roleSay:
		sc.sayDone = true
	case roleTool:
		// A name proposes a tool, even in a second "tool" after a null
		// one (the parser refuses such a decision: nothing more shows).
		if sc.toolName > 0 {
			sc.tool = toolProposed
		} else if sc.tool == toolUnread {
			sc.tool = toolNone
		}
	}
}

// hexValue is the value of a hexadecimal digit, 255 for any other byte.
func hexValue(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}

// completeUTF8 is the length of b's prefix that ends on a whole UTF-8
// sequence: at most the last three bytes wait for the rest of theirs.
func completeUTF8(b []byte) int {
	for back := 1; back <= utf8.UTFMax-1 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < utf8.RuneSelf {
			return len(b) // ASCII: all complete
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-back:]) {
				return len(b)
			}
			return len(b) - back
		}
	}
	return len(b)
}
