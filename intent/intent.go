// Package intent holds the deterministic text machinery the engine applies
// before and after its model: word patterns that match word forms with
// word boundaries written out — Go's \b, like JavaScript's, knows only
// ASCII letters — a router's Lexicon, which combines the word lists of its
// intercepts, guards and web-search detector (the lists are a deployment's
// data, not code: rules.go), and Claims, which finds the outcomes a model's
// reply asserts (claims.go, outcomes.go).
//
// It is pure: no state, no I/O, no model. Rules that are wrong on a rare
// form are wrong here, visibly, with a test.
package intent

import (
	"fmt"
	"regexp"
	"strings"
)

// Pattern is a phrase of one or more words. In its spec words are
// separated by spaces; a word ending in * matches any word form that
// starts with it ("отзыв*": отзыв, отзывы, отзывов); alternatives are
// separated by | ("доллар*|евро|валют*"). Words may be separated in text
// by any run of non-letters; the phrase must begin and end at word
// boundaries.
type Pattern struct {
	Spec string
	re   *regexp.Regexp
}

// boundary is what stands before and after a phrase: the edge of the
// text, or a character that is neither a letter nor a digit.
const boundary = `(?:^|[^\p{L}\p{N}])`
const endBoundary = `(?:$|[^\p{L}\p{N}])`

// Compile builds a Pattern from its spec; it panics on a spec that is not
// one (see CompileLexicon for specs that are data).
func Compile(spec string) Pattern {
	p, err := compile(spec)
	if err != nil {
		panic(err)
	}
	return p
}

// compile builds a Pattern from its spec: words with no empty one, nor an
// empty stem, which would match any word.
func compile(spec string) (Pattern, error) {
	var words []string
	for _, w := range strings.Fields(strings.ToLower(spec)) {
		var alts []string
		for _, a := range strings.Split(w, "|") {
			stem, forms := strings.CutSuffix(a, "*")
			if stem == "" {
				return Pattern{}, fmt.Errorf("pattern %q: an empty word", spec)
			}
			alt := regexp.QuoteMeta(fold(stem))
			if forms {
				alt += `[\p{L}]*`
			}
			alts = append(alts, alt)
		}
		words = append(words, "(?:"+strings.Join(alts, "|")+")")
	}
	if len(words) == 0 {
		return Pattern{}, fmt.Errorf("pattern %q: no words", spec)
	}
	return Pattern{Spec: spec, re: regexp.MustCompile(boundary + strings.Join(words, `[^\p{L}\p{N}]+`) + endBoundary)}, nil
}

// Match reports whether text holds the phrase.
func (p Pattern) Match(text string) bool {
	return p.re.MatchString(fold(strings.ToLower(text)))
}

// Set is a list of patterns.
type Set []Pattern

// CompileSet compiles specs.
func CompileSet(specs ...string) Set {
	out := make(Set, len(specs))
	for i, s := range specs {
		out[i] = Compile(s)
	}
	return out
}

// First returns the spec of the first pattern text holds, or "".
func (s Set) First(text string) string {
	low := fold(strings.ToLower(text))
	for _, p := range s {
		if p.re.MatchString(low) {
			return p.Spec
		}
	}
	return ""
}

// fold reads ё as е, as people type it either way.
func fold(s string) string { return strings.ReplaceAll(s, "ё", "е") }
