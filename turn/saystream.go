package turn

import (
	"unicode/utf16"
	"unicode/utf8"
)

// toolField is what a JSON decision's "tool" says, as far as it was read.
type toolField int8

const (
	toolUnread   toolField = iota // not read yet
	toolNone                      // null or "": a plain reply
	toolProposed                  // a tool name
)

// sayScanner reads a JSON decision as it arrives, piece by piece, and
// hands on the decoded text of its top-level "say" string while it is
// still being written; it notes what the top-level "tool" holds — a name
// in any "tool" key wins. Text
// before the object, nested objects and strings that merely contain
// "say" are skipped; only the first "say" counts. It never fails: text
// that is not JSON simply yields nothing.
type sayScanner struct {
	depth     int
	inString  bool
	expectKey bool // at depth 1, the next string is a key
	role      strRole
	key       []byte // the key being read
	valueOf   string // the top-level key whose value comes next
	escape    int8   // 0, 1 after '\\', 2..5 reading \uXXXX digits
	hex       rune
	high      rune // a high surrogate waiting for its low half
	tool      toolField
	toolName  int  // bytes of the tool's name read
	sayDone   bool // the first "say" ended
	done      bool // the top-level object closed
	out       []byte
}

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
		if sc.inString {
			sc.stringByte(piece[i])
		} else {
			sc.structByte(piece[i])
		}
	}
	n := completeUTF8(sc.out)
	said := string(sc.out[:n])
	sc.out = append(sc.out[:0], sc.out[n:]...)
	return said
}

// structByte reads one byte outside strings.
func (sc *sayScanner) structByte(c byte) {
	switch c {
	case '{', '[':
		sc.depth++
		sc.expectKey = sc.depth == 1 && c == '{'
	case '}', ']':
		if sc.depth > 0 {
			sc.depth--
			sc.done = sc.depth == 0
		}
	case ':':
		if sc.depth == 1 {
			sc.expectKey = false
		}
	case ',':
		if sc.depth == 1 {
			sc.expectKey, sc.valueOf = true, ""
		}
	case '"':
		if sc.depth == 0 {
			return // a string before the object: not the decision
		}
		sc.inString, sc.role = true, roleOther
		switch {
		case sc.depth == 1 && sc.expectKey:
			sc.role, sc.key = roleKey, sc.key[:0]
		case sc.depth == 1 && sc.valueOf == "say" && !sc.sayDone:
			sc.role = roleSay
		case sc.depth == 1 && sc.valueOf == "tool":
			sc.role, sc.toolName = roleTool, 0
		}
	case 'n':
		if sc.depth == 1 && sc.valueOf == "tool" && sc.tool == toolUnread {
			sc.tool = toolNone // null
		}
	}
}

// stringByte reads one byte inside a string.
func (sc *sayScanner) stringByte(c byte) {
	switch {
	case sc.escape == 1:
		sc.escape = 0
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
		default: // '"', '\\', '/'
			sc.char(rune(c))
		}
	case sc.escape >= 2:
		sc.hex = sc.hex<<4 | rune(hexValue(c))
		if sc.escape++; sc.escape == 6 {
			sc.escape = 0
			sc.char(sc.hex)
		}
	case c == '\\':
		sc.escape = 1
	case c == '"':
		sc.endString()
	default:
		sc.flushHigh()
		sc.raw(c)
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

func hexValue(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0
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
