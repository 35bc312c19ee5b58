package intent

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/canonical"
)

// Claims finds where a reply asserts an outcome — "refund_done" in «Мы
// вернули деньги», "Your refund was issued", «Вoзврат **выполнен**» — or
// says in general words that something is done («Готово.», "All set").
// It reads the canonical form of the text (package canonical), so
// invisible characters, markup and letters of another script change
// nothing, and it matches word patterns, not strings:
//
//   - a pattern is words separated by spaces, as in Pattern: "стем*" is any
//     form starting with the stem, "выполнен~" a Russian participle's forms
//     (выполнен, выполнена, выполненный …, not the noun «выполнение»),
//     "a|b" either word; "..." between two
//     words lets up to eight other words stand there, ".." the same within
//     a clause (no comma, colon, dash, quote or line break between). Words
//     may be apart by any punctuation but the end of a sentence (. ! ? ;)
//     and, after "..", the end of a clause.
//   - a match does not assert when its sentence is a question (it ends with
//     "?", or holds «ли», "whether"), when a negation or a word of future,
//     condition or possibility stands in it or in its clause before it
//     («не», "not", «будет», "will", «если», "once", "be" …) or right after
//     it («…выполнен не будет»), when it is or names a request («заявка на
//     возврат оформлена», "refund request sent"), or when it reports what
//     the user said («Вы пишете, что…», "you wrote «…»").
//
// A Claims is safe for concurrent use; compile it once.
type Claims struct {
	outcomes []string // outcome names, by index
	pats     []claimPattern
	reported []claimPattern // phrases that report the user's words
	words    int            // distinct pattern words
	trie     []trieNode
}

// Assertion is one outcome a text asserts: Outcome is its name, or ""
// for general words of completion; Pattern is the spec that matched.
type Assertion struct {
	Outcome string
	Pattern string
}

type claimPattern struct {
	outcome int // index in outcomes, -1 for completion words
	spec    string
	steps   []step
}

// step is one word of a pattern: the id of its set of alternatives, and
// whether up to maxGap other words may stand before it (in its clause
// only, with clause).
type step struct {
	word   int
	gap    bool
	clause bool
}

const maxGap = 8

// Word ids the context rules use; pattern words come after them.
const (
	wordNeg = iota
	wordModal
	wordQuestion
	wordPrep
	wordDet
	wordRequest
	reservedWords
)

// CompileClaims compiles outcomes (name → pattern specs) with the general
// words of completion (Completion). It fails on a spec that is empty or
// starts or ends with a gap.
func CompileClaims(outcomes map[string][]string) (*Claims, error) {
	c := &Claims{words: reservedWords, trie: []trieNode{{}}}
	ids := map[string]int{}
	for id, list := range map[int][]string{wordNeg: negations, wordModal: modals, wordQuestion: questionParticles, wordPrep: prepositions, wordDet: determiners, wordRequest: requestWords} {
		for _, w := range list {
			c.addAlt(w, id)
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range outcomes {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		c.outcomes = append(c.outcomes, name)
		for _, spec := range outcomes[name] {
			p, err := c.compile(spec, ids)
			if err != nil {
				return nil, fmt.Errorf("outcome %s: %w", name, err)
			}
			p.outcome = len(c.outcomes) - 1
			c.pats = append(c.pats, p)
		}
	}
	for _, spec := range Completion {
		p, err := c.compile(spec, ids)
		if err != nil {
			return nil, fmt.Errorf("completion: %w", err)
		}
		p.outcome = -1
		c.pats = append(c.pats, p)
	}
	for _, spec := range reportedSpeech {
		p, err := c.compile(spec, ids)
		if err != nil {
			return nil, fmt.Errorf("reported speech: %w", err)
		}
		c.reported = append(c.reported, p)
	}
	return c, nil
}

// compile turns a spec into steps, giving each distinct word (its set of
// alternatives) one id.
func (c *Claims) compile(spec string, ids map[string]int) (claimPattern, error) {
	p := claimPattern{spec: spec}
	gap, clause := false, false
	for _, w := range strings.Fields(strings.ToLower(spec)) {
		if w == "..." || w == ".." {
			if len(p.steps) == 0 || gap {
				return p, fmt.Errorf("pattern %q: a gap must stand between two words", spec)
			}
			gap, clause = true, w == ".."
			continue
		}
		id, ok := ids[w]
		if !ok {
			id = c.words
			c.words++
			ids[w] = id
			for _, alt := range strings.Split(w, "|") {
				if canonical.Form(strings.TrimRight(alt, "*~")) == "" {
					return p, fmt.Errorf("pattern %q: an empty word", spec)
				}
				c.addAlt(alt, id)
			}
		}
		p.steps = append(p.steps, step{word: id, gap: gap, clause: clause})
		gap, clause = false, false
	}
	if len(p.steps) == 0 || gap {
		return p, fmt.Errorf("pattern %q: no words, or a gap at its end", spec)
	}
	return p, nil
}

// trieNode is a node of the trie of every pattern word's canonical form:
// stems lists the words whose stem ends here, exact those that end here.
type trieNode struct {
	next  []trieEdge
	stems []int
	exact []int
}

type trieEdge struct {
	b    byte
	node int32
}

// participleEndings are the endings "~" stands for.
var participleEndings = []string{"", "а", "о", "ы", "ый", "ая", "ое", "ые", "ую", "ого", "ой", "н*"}

// addAlt adds one alternative ("вернул*", "done", "выполнен~") of word id.
func (c *Claims) addAlt(alt string, id int) {
	if stem, ok := strings.CutSuffix(alt, "~"); ok {
		for _, e := range participleEndings {
			c.addAlt(stem+e, id)
		}
		return
	}
	stem, isStem := strings.CutSuffix(alt, "*")
	form := canonical.Form(stem)
	n := 0
	for i := 0; i < len(form); i++ {
		n = c.child(n, form[i])
	}
	if isStem {
		c.trie[n].stems = append(c.trie[n].stems, id)
	} else {
		c.trie[n].exact = append(c.trie[n].exact, id)
	}
}

func (c *Claims) child(n int, b byte) int {
	for _, e := range c.trie[n].next {
		if e.b == b {
			return int(e.node)
		}
	}
	c.trie = append(c.trie, trieNode{})
	c.trie[n].next = append(c.trie[n].next, trieEdge{b: b, node: int32(len(c.trie) - 1)})
	return len(c.trie) - 1
}

// scratch is the reusable working memory of one Find.
type scratch struct {
	form  []byte
	toks  []token
	bits  []uint64
	cands []int32 // the tokens that are a word of some pattern
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{form: make([]byte, 0, 1024), toks: make([]token, 0, 128), cands: make([]int32, 0, 16)}
}}

// Find appends to dst what text asserts, each outcome once (and general
// completion once), and returns it. It allocates nothing when the text
// holds no pattern word at all.
func (c *Claims) Find(dst []Assertion, text string) []Assertion {
	if c == nil || strings.TrimSpace(text) == "" {
		return dst
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.form = canonical.Append(sc.form[:0], text)
	dst = c.find(sc, dst)
	if hyphenInWord(text) {
		// Words joined by a hyphen may be two words («возврат-выполнен»)
		// as well as one word broken («Воз-врат»): read both.
		sc.form = canonical.AppendSplit(sc.form[:0], text)
		dst = c.find(sc, dst)
	}
	return dst
}

// find appends what the form in sc asserts to dst.
func (c *Claims) find(sc *scratch, dst []Assertion) []Assertion {
	if !c.tokenize(sc) {
		return dst
	}
	for i := range c.pats {
		p := &c.pats[i]
		if c.seen(dst, p.outcome) {
			continue
		}
		for _, t32 := range sc.cands {
			t := int(t32)
			if !sc.has(t, p.steps[0].word, c.width()) {
				continue
			}
			if end, ok := c.match(sc, p, t); ok && c.asserts(sc, t, end) {
				dst = append(dst, Assertion{Outcome: c.name(p.outcome), Pattern: p.spec})
				break
			}
		}
	}
	return dst
}

func (c *Claims) name(outcome int) string {
	if outcome < 0 {
		return ""
	}
	return c.outcomes[outcome]
}

func (c *Claims) seen(dst []Assertion, outcome int) bool {
	name := c.name(outcome)
	for _, a := range dst {
		if a.Outcome == name {
			return true
		}
	}
	return false
}

func (c *Claims) width() int { return (c.words + 63) / 64 }

// token is a word of the form (kind 0, with its span) or a punctuation
// mark that matters: one of . ! ? ; , : - " ( ) and newline.
type token struct {
	start, end int32
	kind       byte
}

func (sc *scratch) has(t, word, width int) bool {
	return sc.toks[t].kind == 0 && sc.bits[t*width+word/64]&(1<<(word%64)) != 0
}

func (sc *scratch) word(t int) bool { return sc.toks[t].kind == 0 }

// tokenize splits the form into tokens and marks each word with the
// pattern words it is; it reports whether any word is one of a pattern.
func (c *Claims) tokenize(sc *scratch) bool {
	sc.toks = sc.toks[:0]
	b := sc.form
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if isWordRune(r) {
			start := i
			for i += size; i < len(b); i += size {
				r, size = rune(b[i]), 1
				if r >= utf8.RuneSelf {
					r, size = utf8.DecodeRune(b[i:])
				}
				if !isWordRune(r) {
					break
				}
			}
			sc.toks = append(sc.toks, token{start: int32(start), end: int32(i)})
			continue
		}
		switch r {
		case '.', '!', '?', ';', ',', ':', '-', '"', '\n', '(', ')':
			sc.toks = append(sc.toks, token{start: int32(i), end: int32(i + 1), kind: byte(r)})
		}
		i += size
	}
	w := c.width()
	n := len(sc.toks) * w
	if cap(sc.bits) < n {
		sc.bits = make([]uint64, n)
	}
	sc.bits = sc.bits[:n]
	clear(sc.bits)
	sc.cands = sc.cands[:0]
	for t, tk := range sc.toks {
		if tk.kind == 0 && c.mark(sc.bits[t*w:(t+1)*w], b[tk.start:tk.end]) {
			sc.cands = append(sc.cands, int32(t))
		}
	}
	return len(sc.cands) > 0
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || checkMark(r)
}

// checkMark: the symbols that say "done" as a word does («Возврат: ✅»).
func checkMark(r rune) bool { return r == '✅' || r == '✔' || r == '☑' || r == '✓' }

// mark sets the bits of the words w is and reports whether it is one of a
// pattern (not only a context word).
func (c *Claims) mark(bits []uint64, w []byte) bool {
	n, hit := 0, false
	set := func(ids []int) {
		for _, id := range ids {
			bits[id/64] |= 1 << (id % 64)
			if id >= reservedWords {
				hit = true
			}
		}
	}
	for i := 0; ; i++ {
		set(c.trie[n].stems)
		if i == len(w) {
			set(c.trie[n].exact)
			return hit
		}
		next := -1
		for _, e := range c.trie[n].next {
			if e.b == w[i] {
				next = int(e.node)
				break
			}
		}
		if next < 0 {
			return hit
		}
		n = next
	}
}

// clauseMark: the marks that end a clause; gapMark those a ".." gap does
// not cross (a dash or a colon may stand inside a clause: «Выполнен —
// возврат»).
func gapMark(kind byte) bool {
	return kind == ',' || kind == '"' || kind == '\n' || kind == '(' || kind == ')'
}

// clauseMark: the marks that end a clause.
func clauseMark(kind byte) bool { return kind == ':' || kind == '-' || gapMark(kind) }

// barrier: the marks that end a sentence.
func barrier(kind byte) bool { return kind == '.' || kind == '!' || kind == '?' || kind == ';' }

// match matches p's steps from the word at t on and returns the token of
// its last word.
func (c *Claims) match(sc *scratch, p *claimPattern, t int) (int, bool) {
	w := c.width()
	pos := t
	for _, st := range p.steps[1:] {
		skipped, found := 0, -1
		for k := pos + 1; k < len(sc.toks); k++ {
			if kind := sc.toks[k].kind; barrier(kind) || st.clause && gapMark(kind) {
				break
			}
			if !sc.word(k) {
				continue
			}
			if sc.has(k, st.word, w) {
				found = k
				break
			}
			if skipped++; !st.gap || skipped > maxGap {
				break
			}
		}
		if found < 0 {
			return 0, false
		}
		pos = found
	}
	return pos, true
}

// asserts applies the context rules to a match from token a to token b.
func (c *Claims) asserts(sc *scratch, a, b int) bool {
	w := c.width()
	sStart, sEnd := a, b+1
	for sStart > 0 && !barrier(sc.toks[sStart-1].kind) {
		sStart--
	}
	for sEnd < len(sc.toks) && !barrier(sc.toks[sEnd].kind) {
		sEnd++
	}
	if sEnd < len(sc.toks) && sc.toks[sEnd].kind == '?' {
		return false
	}
	for t := sStart; t < sEnd; t++ {
		if sc.has(t, wordQuestion, w) {
			return false
		}
	}
	// The clause before the match, up to six words back, and the match.
	cStart, words := a, 0
	for cStart > sStart && words < 6 {
		k := sc.toks[cStart-1].kind
		if clauseMark(k) {
			break
		}
		cStart--
		if k == 0 {
			words++
		}
	}
	for t := cStart; t <= b; t++ {
		if sc.has(t, wordNeg, w) || sc.has(t, wordModal, w) || t >= a && sc.has(t, wordRequest, w) {
			return false
		}
	}
	// Two words right after it, within the clause.
	for t, words := b+1, 0; t < sEnd && words < 2 && sc.word(t); t, words = t+1, words+1 {
		if sc.has(t, wordNeg, w) || sc.has(t, wordModal, w) || sc.has(t, wordRequest, w) {
			return false
		}
	}
	if c.requested(sc, a) {
		return false
	}
	return !c.reports(sc, sStart, a)
}

// requested reports whether the match at a is the object of a request:
// a preposition right before it («заявка на возврат», "request for a
// refund"), past a determiner or two.
func (c *Claims) requested(sc *scratch, a int) bool {
	w := c.width()
	for t, dets := a-1, 0; t >= 0 && sc.word(t) && dets <= 2; t-- {
		switch {
		case sc.has(t, wordPrep, w):
			return true
		case sc.has(t, wordDet, w):
			dets++
		default:
			return false
		}
	}
	return false
}

// reports reports whether the match at a reports the user's words: a
// phrase such as «вы пишете», "you wrote" before it in its sentence, or
// before the quote it stands in.
func (c *Claims) reports(sc *scratch, sStart, a int) bool {
	open := -1
	for t := 0; t < a; t++ {
		if sc.toks[t].kind == '"' {
			if open < 0 {
				open = t
			} else {
				open = -1
			}
		}
	}
	lo := sStart
	if open >= 0 && open < lo {
		lo = open
	}
	if open >= 0 {
		// The words before the quote, across the end of a sentence.
		for words := 0; lo > 0 && words < 8; lo-- {
			if sc.word(lo - 1) {
				words++
			}
		}
	}
	for i := range c.reported {
		p := &c.reported[i]
		for t := lo; t < a; t++ {
			if sc.has(t, p.steps[0].word, c.width()) {
				if end, ok := c.match(sc, p, t); ok && end < a {
					return true
				}
			}
		}
	}
	return false
}

// hyphenInWord reports whether a dash or hyphen stands between two
// letters or digits of text.
func hyphenInWord(text string) bool {
	for i := 0; i < len(text); {
		j := strings.IndexAny(text[i:], "-‐‑‒–—―−")
		if j < 0 {
			return false
		}
		j += i
		_, n := utf8.DecodeRuneInString(text[j:])
		before, _ := utf8.DecodeLastRuneInString(text[:j])
		after, _ := utf8.DecodeRuneInString(text[j+n:])
		if isWordRune(unicode.ToLower(before)) && isWordRune(unicode.ToLower(after)) {
			return true
		}
		i = j + n
	}
	return false
}
