// Package canonical gives text one canonical form for the checks that read
// what a model wrote: two texts a person reads as the same words have the
// same form, however they were disguised. The form is for matching only —
// never shown, never stored, never sent.
//
// Append (and Form) apply, in order:
//   - HTML character references decoded ("&#1074;" is «в»), Unicode NFKC;
//   - invisible and format characters removed: Cf (zero-width space, word
//     joiner, soft hyphen, bidi controls), variation selectors, the other
//     default-ignorable code points;
//   - markup stripped: Markdown emphasis and code spans (* _ ~ `), HTML
//     tags (a block tag such as <br> or <p> ends a line, an inline one such
//     as <b> leaves nothing), a backslash escape;
//   - letters in lower case, without diacritics (ё reads е, é reads e), each
//     mapped to its prototype by the Unicode confusables data (UTS #39),
//     preferring a Latin one: a Latin "o" in «Вoзврат» and the Cyrillic «о»
//     read alike (table.go, generated from confusables.txt by go generate);
//   - quotes as ", dashes as -, white space as one space or a newline;
//   - punctuation inside a word folded: «Воз-врат», "we’ve", «вы·пол·нен»
//     and a word hyphenated across a line read as one word; letters spelled
//     out one by one ("d o n e", "d.o.n.e") read as the word.
//
// Punctuation between words is kept (. , ? ! : ; " -), so a check can
// still tell a question or a quote. The package has no state; every
// function is safe for concurrent use.
package canonical

//go:generate go run gen.go

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Form returns the canonical form of s.
func Form(s string) string {
	return string(Append(make([]byte, 0, len(s)+8), s))
}

// Append appends the canonical form of s to dst and returns it. With a dst
// of enough capacity and text already in NFKC without character
// references (plain ASCII, most Russian), it allocates nothing.
func Append(dst []byte, s string) []byte { return appendForm(dst, s, false) }

// AppendSplit is Append with a hyphen between two letters left standing,
// as punctuation between two words:
// «возврат-выполнен» reads as two words, not as one folded «Воз-врат».
// A check reads both forms of a text that has one.
func AppendSplit(dst []byte, s string) []byte { return appendForm(dst, s, true) }

func appendForm(dst []byte, s string, split bool) []byte {
	if strings.IndexByte(s, '&') >= 0 && strings.IndexByte(s, ';') >= 0 {
		s = html.UnescapeString(s)
	}
	if !inNFKC(s) && norm.NFKC.QuickSpanString(s) < len(s) {
		s = norm.NFKC.String(s)
	}
	w := writer{b: dst, start: len(dst), split: split}
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i = w.ascii(s, i)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		w.rune(r)
	}
	if w.held != 0 {
		w.b = utf8.AppendRune(w.b, w.held)
	}
	return joinSpelled(w.b, w.start)
}

// writer builds a form. space is a separator not yet written (' ' or
// '\n'); held is punctuation after a letter not yet written, which a
// letter that follows folds away.
type writer struct {
	b     []byte
	start int
	space byte
	held  rune
	split bool // fold no hyphen inside a word (AppendSplit)
}

// ascii handles the ASCII byte at s[i] and reports where to go on.
func (w *writer) ascii(s string, i int) int {
	c := s[i]
	switch {
	case isWord(c):
		w.letters(asciiForms[c])
	case c == '*', c == '_', c == '~', c == '`':
		// emphasis and code spans leave their text
	case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
		// an escape leaves the character it escapes
	case c == '<':
		if n, block, ok := tag(s[i:]); ok {
			if block {
				w.sep('\n')
			}
			return i + n
		}
		w.punct('<')
	case c == '\n', c == '\r', c == '\v', c == '\f':
		w.sep('\n')
	case c == ' ', c == '\t':
		w.sep(' ')
	case c == '|':
		w.letters(asciiForms[c]) // reads as l
	default:
		w.punct(rune(c))
	}
	return i + 1
}

// rune handles a rune outside ASCII.
func (w *writer) rune(r rune) {
	if r < rune(len(small)) {
		switch e := small[r]; e.kind {
		case kindWord:
			w.letters(e.form)
			return
		case kindGone:
			return
		}
	}
	w.slowRune(r)
}

func (w *writer) slowRune(r rune) {
	switch {
	case unicode.IsSpace(r):
		if r == '\u2028' || r == '\u2029' || r == '\u0085' {
			w.sep('\n')
		} else {
			w.sep(' ')
		}
	case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		// invisible: gone, joining what it split
	case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
		if f, ok := lookup(r); ok {
			w.letters(f)
		} else {
			w.letter(r)
		}
	default:
		if f, ok := lookup(r); ok && f != "" && isWord(f[0]) {
			w.letters(f) // a symbol that reads as a letter
			return
		}
		w.punct(r)
	}
}

// letters appends the form of a word's rune ("" for a mark).
func (w *writer) letters(f string) {
	if f == "" {
		return
	}
	w.beforeLetter()
	w.b = append(w.b, f...)
}

func (w *writer) letter(r rune) {
	w.beforeLetter()
	w.b = utf8.AppendRune(w.b, r)
}

// beforeLetter writes what stands between the last letter and the next:
// held punctuation folds away when nothing or, after a hyphen, a line
// break separates it from the letter («воз-\nврат»); a space otherwise.
func (w *writer) beforeLetter() {
	if w.held != 0 {
		if w.space == 0 || w.held == '-' && w.space == '\n' {
			w.held, w.space = 0, 0
			return
		}
		w.b = utf8.AppendRune(w.b, w.held)
		w.held = 0
	}
	w.flushSpace()
}

// punct appends punctuation or a symbol in its one spelling.
func (w *writer) punct(r rune) {
	switch r {
	case '«', '»', '“', '”', '„', '‟', '❝', '❞', '〝', '〞', '〟':
		r = '"'
	case '‘', '’', '‚', '‛', '′':
		r = '\''
	case '‐', '‑', '‒', '–', '—', '―', '−', '⁃', '﹘':
		r = '-'
	case '·', '•', '‧', '∙', '⋅':
		r = '·'
	}
	if (r == '-' && !w.split || r == '\'' || r == '·') && w.held == 0 && w.space == 0 && w.afterLetter() {
		w.held = r
		return
	}
	w.flush()
	w.b = utf8.AppendRune(w.b, r)
}

// sep records a separator; a newline outweighs a space.
func (w *writer) sep(c byte) {
	if len(w.b) > w.start && w.space != '\n' {
		w.space = c
	}
}

func (w *writer) flushSpace() {
	if w.space != 0 {
		w.b = append(w.b, w.space)
		w.space = 0
	}
}

// flush writes held punctuation and the pending separator.
func (w *writer) flush() {
	if w.held != 0 {
		w.b = utf8.AppendRune(w.b, w.held)
		w.held = 0
	}
	w.flushSpace()
}

// afterLetter reports whether the form so far ends with a letter or digit.
func (w *writer) afterLetter() bool {
	if len(w.b) == w.start {
		return false
	}
	r, _ := utf8.DecodeLastRune(w.b[w.start:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// lookup is the form of r when it is not r itself.
func lookup(r rune) (string, bool) {
	lo, hi := 0, len(tableKeys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if tableKeys[m] < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(tableKeys) && tableKeys[lo] == r {
		v := tableVals[lo]
		return tableData[v>>8 : v>>8+v&0xff], true
	}
	return "", false
}

// asciiForms are the forms of ASCII letters, digits and "|".
var asciiForms = func() (out [utf8.RuneSelf]string) {
	for c := range utf8.RuneSelf {
		if isWord(byte(c)) || c == '|' {
			if f, ok := lookup(rune(c)); ok {
				out[c] = f
			} else {
				out[c] = string(rune(c))
			}
		}
	}
	return out
}()

// small caches how rune handles the runes of the Latin, Greek and Cyrillic
// blocks: a word's rune with its form, an invisible one, or anything else
// (punctuation and space, left to slowRune).
var small = func() (out [0x530]struct {
	kind uint8
	nfkc bool // stable: in NFKC alone and next to any other such rune
	form string
}) {
	for r := rune(utf8.RuneSelf); r < rune(len(out)); r++ {
		out[r].nfkc = nfkcStable(r)
		switch {
		case unicode.IsSpace(r):
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
			out[r].kind = kindGone
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			out[r].kind = kindWord
			if f, ok := lookup(r); ok {
				out[r].form = f
			} else {
				out[r].form = string(r)
			}
			if out[r].form == "" {
				out[r].kind = kindGone
			}
		}
	}
	return out
}()

// punctNFKC says which runes of General Punctuation and Currency Symbols
// (dashes, quotes, ₽) are stable in NFKC, as small does for its blocks.
var punctNFKC = func() (out [0xC0]bool) {
	for i := range out {
		out[i] = nfkcStable(punctStart + rune(i))
	}
	return out
}()

const punctStart = 0x2000

// nfkcStable reports whether r is in NFKC and composes with no rune
// before it, so that a text of such runes is in NFKC as it is.
func nfkcStable(r rune) bool {
	s := string(r)
	p := norm.NFKC.PropertiesString(s)
	return norm.NFKC.IsNormalString(s) && p.CCC() == 0 && p.BoundaryBefore()
}

const (
	kindOther uint8 = iota
	kindWord
	kindGone
)

// inNFKC reports whether s is in NFKC for certain because each of its
// runes is ASCII, or of the cached blocks and neither decomposes nor
// combines with another; false means "perhaps not".
func inNFKC(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < rune(len(small)):
			if !small[r].nfkc {
				return false
			}
		case r >= punctStart && r < punctStart+rune(len(punctNFKC)):
			if !punctNFKC[r-punctStart] {
				return false
			}
		default:
			return false
		}
		i += n
	}
	return true
}

func isWord(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

func isPunct(c byte) bool { return strings.IndexByte("\\`*_{}[]()#+-.!<>~|\"'", c) >= 0 }

// blockTags end a line where they stand.
var blockTags = map[string]bool{"br": true, "p": true, "div": true, "li": true, "ul": true, "ol": true, "tr": true, "td": true, "th": true,
	"table": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "hr": true, "blockquote": true, "pre": true}

// tag reads an HTML tag at the start of s ("<b>", "</span>", "<br/>",
// "<a href=...>"): its length and whether it is a block tag.
func tag(s string) (int, bool, bool) {
	i := 1
	if i < len(s) && s[i] == '/' {
		i++
	}
	name := i
	for i < len(s) && i-name < 12 && isWord(s[i]) {
		i++
	}
	if i == name || !('a' <= s[name]|0x20 && s[name]|0x20 <= 'z') {
		return 0, false, false
	}
	tagName := s[name:i]
	for end := i; end < len(s) && end < 300; end++ {
		switch s[end] {
		case '>':
			var lower [12]byte
			for k := range len(tagName) {
				lower[k] = tagName[k] | 0x20
			}
			return end + 1, blockTags[string(lower[:len(tagName)])], true
		case '<', '\n':
			return 0, false, false
		}
	}
	return 0, false, false
}

// joinSpelled joins letters spelled out one by one — at least three single
// letters separated by one space, dot or hyphen each ("d o n e",
// "d.o.n.e") — into the word they spell.
func joinSpelled(b []byte, start int) []byte {
	out := start
	for i := start; i < len(b); {
		n := spelledRun(b, start, i)
		if n == 0 {
			b[out] = b[i]
			out++
			i++
			continue
		}
		for end := i + n; i < end; {
			r, size := utf8.DecodeRune(b[i:])
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				out += copy(b[out:], b[i:i+size])
			}
			i += size
		}
	}
	return b[:out]
}

// spelledRun is the length of a run of single letters at b[i], or 0.
func spelledRun(b []byte, start, i int) int {
	if i > start && !spelledSep(b[i-1]) || b[i] < utf8.RuneSelf && !isWord(b[i]) || b[i]&0xC0 == 0x80 {
		return 0 // not the start of a word
	}
	if _, size := utf8.DecodeRune(b[i:]); i+size >= len(b) || !spelledSep(b[i+size]) {
		return 0 // not a word of one letter
	}
	letters, j, last := 0, i, i
	for j < len(b) {
		r, size := utf8.DecodeRune(b[j:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			break
		}
		j += size
		if j < len(b) {
			if r2, _ := utf8.DecodeRune(b[j:]); unicode.IsLetter(r2) || unicode.IsDigit(r2) {
				break // a longer word
			}
		}
		letters++
		last = j
		if j < len(b) && spelledSep(b[j]) && j+1 < len(b) {
			j++
			continue
		}
		break
	}
	if letters < 3 {
		return 0
	}
	return last - i
}

func spelledSep(c byte) bool { return c == ' ' || c == '.' || c == '-' }
