package knowledge

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/arbiterhq/arbiter/tool/internal/textclean"
)

// Query limits.
const (
	maxTerms = 12 // words of a query used for matching
	minStem  = 3  // letters a stem keeps; shorter words match exactly
)

// cleanText prepares text for storage: NFC normalized, control characters
// other than newline and tab removed (the snippet markers are control
// characters, so stored text can never contain one), ends trimmed.
func cleanText(s string) string { return textclean.Text(norm.NFC.String(s)) }

// cleanLine is cleanText with every run of white space made one space.
func cleanLine(s string) string { return textclean.Line(norm.NFC.String(s)) }

// foldIndex is the text the index holds for s (already cleaned): "ё" and
// "Ё" become "е" and "Е". Both are two bytes in UTF-8, so every byte offset
// in the result is the same offset in s.
func foldIndex(s string) string {
	if !strings.ContainsAny(s, "ёЁ") {
		return s
	}
	return strings.NewReplacer("ё", "е", "Ё", "Е").Replace(s)
}

// isWordRune reports whether r belongs to a word: letters, digits and
// other numbers, and combining marks left after NFC.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r)
}

// queryWords splits a query into distinct lower-case folded words, in
// order, at most maxTerms. One-letter words are dropped when the query
// has longer ones.
func queryWords(q string) []string {
	q = strings.ToLower(foldIndex(norm.NFC.String(q)))
	fields := strings.FieldsFunc(q, func(r rune) bool { return !isWordRune(r) })
	seen := make(map[string]bool, len(fields))
	var long, short []string
	for _, f := range fields {
		if seen[f] {
			continue
		}
		seen[f] = true
		if utf8.RuneCountInString(f) > 1 {
			long = append(long, f)
		} else {
			short = append(short, f)
		}
	}
	words := long
	if len(words) == 0 {
		words = short
	}
	if len(words) > maxTerms {
		words = words[:maxTerms]
	}
	return words
}

// russianEndings are the inflectional endings stem strips from Cyrillic
// words (after ё→е folding), longest first so "компаниями" loses "иями",
// not "и".
var russianEndings = sortedByLength([]string{
	// nouns
	"иями", "ями", "ами", "иях", "ях", "ах", "ией", "ием", "иям", "ям", "ам",
	"ия", "ию", "ии", "ие", "ье", "ья", "ью", "ьи",
	"ов", "ев", "ей", "ой", "ом", "ем",
	// adjectives and participles
	"ого", "его", "ому", "ему", "ыми", "ими", "ая", "яя", "ое", "ее", "ые",
	"ый", "ий", "ую", "юю", "ых", "их", "ым", "им",
	// single vowels and the soft sign
	"а", "я", "о", "е", "у", "ю", "ы", "и", "ь", "й",
})

func sortedByLength(list []string) []string {
	out := append([]string(nil), list...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && utf8.RuneCountInString(out[j]) > utf8.RuneCountInString(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// stem reduces a lower-case word to the prefix that is matched: one
// inflectional ending removed when at least minStem letters remain.
func stem(w string) string {
	runes := []rune(w)
	n := len(runes)
	if n <= minStem {
		return w
	}
	switch {
	case isCyrillic(runes):
		for _, e := range russianEndings {
			if k := utf8.RuneCountInString(e); n-k >= minStem && strings.HasSuffix(w, e) {
				return string(runes[:n-k])
			}
		}
	case isLatin(runes):
		return stemEnglish(w)
	}
	return w
}

// stemEnglish strips one of -ies, -ing, -ed, -es (after s, x, z, ch, sh),
// -s (not after s, u or i) or -y (after a consonant, so "company" meets
// "companies"), keeping minStem letters.
func stemEnglish(w string) string {
	cut := func(suffix string) (string, bool) {
		if !strings.HasSuffix(w, suffix) || len(w)-len(suffix) < minStem {
			return "", false
		}
		return w[:len(w)-len(suffix)], true
	}
	if s, ok := cut("ies"); ok {
		return s
	}
	if s, ok := cut("ing"); ok {
		return s
	}
	if s, ok := cut("ed"); ok {
		return s
	}
	if s, ok := cut("es"); ok {
		for _, tail := range []string{"s", "x", "z", "ch", "sh"} {
			if strings.HasSuffix(s, tail) {
				return s
			}
		}
	}
	if s, ok := cut("s"); ok && !strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "u") && !strings.HasSuffix(s, "i") {
		return s
	}
	if s, ok := cut("y"); ok && !strings.ContainsAny(s[len(s)-1:], "aeiouy") {
		return s
	}
	return w
}

func isCyrillic(runes []rune) bool {
	for _, r := range runes {
		if unicode.Is(unicode.Cyrillic, r) {
			return true
		}
	}
	return false
}

func isLatin(runes []rune) bool {
	for _, r := range runes {
		if !unicode.Is(unicode.Latin, r) {
			return false
		}
	}
	return true
}

// matchTerm is one word as an FTS5 query term: a quoted phrase, with a
// prefix star when the word is long enough to be stemmed. Words hold only
// letters, digits and marks, so the quoting is belt and braces.
func matchTerm(w string) string {
	quoted := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	if utf8.RuneCountInString(w) < minStem {
		return quoted
	}
	return `"` + strings.ReplaceAll(stem(w), `"`, `""`) + `"*`
}

// matchExpr joins the words' terms with op ("AND" or "OR"); "" for none.
func matchExpr(words []string, op string) string {
	terms := make([]string, len(words))
	for i, w := range words {
		terms[i] = matchTerm(w)
	}
	return strings.Join(terms, " "+op+" ")
}

// Snippet markers passed to FTS5's snippet(): control characters, which
// cleanText removes from stored text, so they cannot be confused with it.
const (
	markOpen     = "\x01"
	markClose    = "\x02"
	markEllipsis = "\x03"
)

// Markers in the snippets the tools return.
const (
	hlOpen   = "**"
	hlClose  = "**"
	ellipsis = "…"
)

// restoreSnippet turns FTS5's snippet of the folded body into one of the
// stored body: the fragment is located in the folded body, taken from the
// same offsets of the stored body (so "ё" comes back), and its markers are
// rewritten for display. If the fragment cannot be located the folded
// fragment is used.
func restoreSnippet(raw, body string) string {
	lead := strings.HasPrefix(raw, markEllipsis)
	trail := strings.HasSuffix(raw, markEllipsis) && len(raw) > len(markEllipsis)
	raw = strings.TrimPrefix(raw, markEllipsis)
	raw = strings.TrimSuffix(raw, markEllipsis)

	type mark struct {
		at   int
		open bool
	}
	var plain strings.Builder
	var marks []mark
	for i := 0; i < len(raw); i++ {
		switch raw[i : i+1] {
		case markOpen:
			marks = append(marks, mark{plain.Len(), true})
		case markClose:
			marks = append(marks, mark{plain.Len(), false})
		case markEllipsis:
		default:
			plain.WriteByte(raw[i])
		}
	}
	frag := plain.String()
	if at := strings.Index(foldIndex(body), frag); at >= 0 && frag != "" {
		frag = body[at : at+len(frag)]
	}
	var out strings.Builder
	if lead {
		out.WriteString(ellipsis)
	}
	prev := 0
	for _, m := range marks {
		out.WriteString(frag[prev:m.at])
		if m.open {
			out.WriteString(hlOpen)
		} else {
			out.WriteString(hlClose)
		}
		prev = m.at
	}
	out.WriteString(frag[prev:])
	if trail {
		out.WriteString(ellipsis)
	}
	return strings.Join(strings.Fields(out.String()), " ")
}
