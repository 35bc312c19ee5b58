package turn

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// What people type to answer "Go ahead?" / «Выполнить?». A reply counts as
// a yes (or a no) when, once normalized (replyWords), it is made only of
// phrases of one list — any language's, people mix them — and politeness
// words: "yes, do it", "ok do it", "sure, go ahead 👍", «да, давай»,
// «конечно, пожалуйста». Anything else, a yes with a condition included
// ("yes, but on Friday"), is a new message. Each list is tested, phrase by
// phrase and in combinations, in replies_test.go; entries are written as
// people type them and normalized when the tables are built.

// affirmativeWords are the yes phrases per language.
var affirmativeWords = map[string][]string{
	"en": {
		"yes", "y", "yeah", "yea", "yep", "yup", "ya", "sure", "sure thing", "ok", "okay", "k", "kk",
		"alright", "all right", "fine", "go", "go ahead", "go for it", "go on", "do it", "just do it",
		"do", "please do", "proceed", "confirm", "confirmed", "i confirm", "approve", "approved",
		"correct", "right", "that's right", "exactly", "absolutely", "definitely", "of course",
		"certainly", "sounds good", "looks good", "lgtm", "agreed", "affirmative", "yes sir",
		"send it", "ship it", "make it so", "let's do it", "lets go", "let's go", "why not",
	},
	"ru": {
		"да", "ага", "угу", "ок", "окей", "оке", "хорошо", "ладно", "давай", "давайте", "конечно",
		"конечно да", "разумеется", "подтверждаю", "подтверди", "подтвердить", "подтверждено",
		"верно", "точно", "именно", "так точно", "выполняй", "выполни", "выполнить", "выполнять",
		"делай", "сделай", "делаем", "действуй", "вперёд", "погнали", "поехали", "согласен",
		"согласна", "согласны", "принято", "годится", "идёт", "можно", "добро", "одобряю",
		"да, выполняй", "запускай", "отправляй", "создавай", "давай делай", "ну давай", "ну да",
		"всё верно", "все верно", "правильно", "угу давай", "da",
	},
	"": {"+", "+1", "++", "👍", "👌", "✅", "✔️", "☑️", "🆗"},
}

// negativeWords are the no phrases per language.
var negativeWords = map[string][]string{
	"en": {
		"no", "n", "nope", "nah", "no way", "not now", "not yet", "never mind", "nevermind", "cancel",
		"cancel it", "cancel that", "stop", "abort", "don't", "dont", "don't do it", "do not",
		"do not do it", "forget it", "skip", "skip it", "no need", "wait no", "reject", "decline",
		"not that", "negative",
	},
	"ru": {
		"нет", "не", "неа", "не надо", "не нужно", "не делай", "не выполняй", "не надо так",
		"отмена", "отменить", "отмени", "отменяю", "стоп", "стой", "не сейчас", "не стоит",
		"не хочу", "передумал", "передумала", "забудь", "не то", "ни в коем случае", "отбой",
		"нет не надо", "net",
	},
	"": {"-", "-1", "👎", "❌", "✖️", "🚫", "⛔", "🙅"},
}

// politeWords may surround either answer without changing it.
var politeWords = map[string][]string{
	"en": {"please", "pls", "plz", "kindly", "then", "now"},
	"ru": {"пожалуйста", "плиз", "тогда", "уж", "ну", "сейчас", "же"},
	"":   {"🙏"},
}

// thanksWords may surround either answer too, but a yes with thanks and
// nothing waiting for it ("ок, спасибо") is a message of its own, not a
// confirmation of nothing (see resolvePending).
var thanksWords = map[string][]string{
	"en": {"thanks", "thank you", "thx", "ty", "cheers"},
	"ru": {"спасибо", "спс", "благодарю"},
}

// replyTable is a list of phrases, each a sequence of normalized words.
type replyTable struct {
	phrases map[string]bool // "do it" -> true
	longest int             // words in the longest phrase
}

func newReplyTable(lists ...map[string][]string) replyTable {
	t := replyTable{phrases: map[string]bool{}}
	for _, l := range lists {
		for _, words := range l {
			for _, w := range words {
				f := replyWords(w)
				t.phrases[strings.Join(f, " ")] = true
				t.longest = max(t.longest, len(f))
			}
		}
	}
	return t
}

var (
	yesTable    = newReplyTable(affirmativeWords)
	noTable     = newReplyTable(negativeWords)
	politeTable = newReplyTable(politeWords, thanksWords)
	thanksTable = newReplyTable(thanksWords)
)

// answer tells whether text is a yes (routeAffirm), a no (routeDeny), or
// neither (routeText), and whether it thanks.
func answer(text string) (kind routeKind, thanks bool) {
	words, ok := replyWordsWithin(text, replyVocabulary)
	switch {
	case !ok, len(words) == 0:
	case covers(words, yesTable):
		return routeAffirm, holds(words, thanksTable)
	case covers(words, noTable):
		return routeDeny, holds(words, thanksTable)
	}
	return routeText, false
}

// holds reports whether words hold a phrase of t.
func holds(words []string, t replyTable) bool {
	for i := range words {
		for j := i + 1; j <= len(words) && j-i <= t.longest; j++ {
			if t.phrases[strings.Join(words[i:j], " ")] {
				return true
			}
		}
	}
	return false
}

// covers reports whether words split into phrases of t and politeness
// phrases, with at least one of t.
func covers(words []string, t replyTable) bool {
	// ok[i]: words[:i] splits; seen[i]: ...with a phrase of t in it.
	ok := make([]bool, len(words)+1)
	seen := make([]bool, len(words)+1)
	ok[0] = true
	n := max(t.longest, politeTable.longest)
	for i := 0; i < len(words); i++ {
		if !ok[i] {
			continue
		}
		for j := i + 1; j <= len(words) && j-i <= n; j++ {
			p := strings.Join(words[i:j], " ")
			if t.phrases[p] {
				ok[j], seen[j] = true, true
			} else if politeTable.phrases[p] {
				ok[j], seen[j] = true, seen[j] || seen[i]
			}
		}
	}
	return ok[len(words)] && seen[len(words)]
}

// replyWords is the normalized word sequence of a typed reply: Unicode NFKC,
// lower case, ё as е, invisible and format characters (zero-width spaces,
// joiners, variation selectors, skin tones) removed, apostrophes dropped,
// other punctuation a separator, each symbol (an emoji, "+") a word of its
// own, and a word mixing Latin and Cyrillic lookalikes in one script.
func replyWords(s string) []string {
	words, _ := replyWordsWithin(s, nil)
	return words
}

// replyWordsWithin is replyWords stopping at the first word outside vocab
// (when vocab is not nil), with ok false: a message is rarely an answer,
// and its first word mostly says so.
func replyWordsWithin(s string, vocab map[string]bool) ([]string, bool) {
	words, ok := splitReplyWords(s, vocab)
	if !ok {
		return nil, false
	}
	return joinSigns(words), true
}

// splitReplyWords is replyWordsWithin before joinSigns.
func splitReplyWords(s string, vocab map[string]bool) (words []string, ok bool) {
	s = strings.ToLower(norm.NFKC.String(s))
	var cur strings.Builder
	add := func(w string) bool {
		words = append(words, w)
		return vocab == nil || vocab[w]
	}
	flush := func() bool {
		if cur.Len() == 0 {
			return true
		}
		w := foldScript(cur.String())
		cur.Reset()
		return add(w)
	}
	for _, r := range s {
		in := true
		switch {
		case r == 'ё':
			cur.WriteRune('е')
		case r == '\'' || r == '’' || r == 'ʼ' || r == '`':
			// "don't", "that’s": one word.
		case unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Sk):
			// Invisible, combining or modifying: not part of what was typed.
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			cur.WriteRune(r)
		case unicode.IsSymbol(r) || r == '-' || r == '−':
			if r == '−' {
				r = '-'
			}
			in = flush() && add(string(r))
		default: // spaces and punctuation
			in = flush()
		}
		if !in {
			return nil, false
		}
	}
	if !flush() {
		return nil, false
	}
	return words, true
}

// replyVocabulary is every word the tables' phrases are made of, as
// replyWordsWithin splits them before joinSigns joins "+" and "1": a
// reply holding any other word is made of no phrases.
var replyVocabulary = func() map[string]bool {
	vocab := map[string]bool{}
	for _, lists := range []map[string][]string{affirmativeWords, negativeWords, politeWords, thanksWords} {
		for _, list := range lists {
			for _, phrase := range list {
				words, _ := splitReplyWords(phrase, nil)
				for _, w := range words {
					vocab[w] = true
				}
			}
		}
	}
	return vocab
}()

// joinSigns keeps "+1", "-1", "++" as one word.
func joinSigns(words []string) []string {
	out := words[:0]
	for _, w := range words {
		if n := len(out); n > 0 && (out[n-1] == "+" || out[n-1] == "-" || out[n-1] == "++") && (w == "1" || w == "+" && out[n-1] == "+") {
			out[n-1] += w
			continue
		}
		out = append(out, w)
	}
	return out
}

// Letters that look alike in Latin and Cyrillic, as a Latin word typed on a
// Russian layout (or the reverse) mixes them: "оk", "дa".
var (
	toLatin    = map[rune]rune{'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'к': 'k', 'м': 'm', 'т': 't', 'н': 'h', 'в': 'b'}
	toCyrillic = map[rune]rune{'a': 'а', 'e': 'е', 'o': 'о', 'p': 'р', 'c': 'с', 'y': 'у', 'x': 'х', 'k': 'к', 'm': 'м', 't': 'т', 'h': 'н', 'b': 'в'}
)

// foldScript writes a word that mixes Latin and Cyrillic letters in the one
// script all its letters have: Latin when every Cyrillic letter has a Latin
// lookalike, else Cyrillic when every Latin one has a Cyrillic lookalike.
func foldScript(w string) string {
	var lat, cyr bool
	for _, r := range w {
		lat = lat || unicode.Is(unicode.Latin, r)
		cyr = cyr || unicode.Is(unicode.Cyrillic, r)
	}
	if !lat || !cyr {
		return w
	}
	for _, m := range []map[rune]rune{toLatin, toCyrillic} {
		if f, ok := mapAll(w, m); ok {
			return f
		}
	}
	return w
}

// mapAll maps every letter of w that m holds; ok is false when a letter of
// the other script is left over.
func mapAll(w string, m map[rune]rune) (string, bool) {
	var from *unicode.RangeTable = unicode.Cyrillic
	if _, latin := m['a']; latin {
		from = unicode.Latin
	}
	var b strings.Builder
	for _, r := range w {
		if f, ok := m[r]; ok {
			r = f
		} else if unicode.Is(from, r) {
			return "", false
		}
		b.WriteRune(r)
	}
	return b.String(), true
}
