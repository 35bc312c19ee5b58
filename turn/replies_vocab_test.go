package turn

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// answer stops at the first word outside the tables' vocabulary; it must
// tell every reply exactly as reading all its words does. Replies are
// built from the tables' own phrases, pieces of them ("+" and "1"),
// politeness, thanks, words of no table, and separators that vanish or
// split (punctuation, a zero-width space, a hyphen).
func TestAnswerStopsEarlyWithTheSameVerdict(t *testing.T) {
	var pieces []string
	for _, lists := range []map[string][]string{affirmativeWords, negativeWords, politeWords, thanksWords} {
		for _, list := range lists {
			pieces = append(pieces, list...)
		}
	}
	pieces = append(pieces, "1", "+", "-", "−", "friday", "create", "Да", "ОК", "1x", "++1", "🙂")
	seps := []string{" ", ", ", "! ", "\u200b", "-", "", "…"}
	rng := rand.New(rand.NewPCG(1, 2))
	answers := 0
	for range 20000 {
		var b strings.Builder
		for i := range 1 + rng.IntN(5) {
			if i > 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		kind, thanks := answer(text)
		wantKind, wantThanks := answerReadingAll(text)
		if kind != wantKind || thanks != wantThanks {
			t.Fatalf("answer(%q) = %v, %v; reading every word: %v, %v", text, kind, thanks, wantKind, wantThanks)
		}
		if kind != routeText {
			answers++
		}
	}
	if answers < 2000 {
		t.Fatalf("only %d of the replies were answers: the corpus tests too little", answers)
	}
}

// answerReadingAll is answer without the vocabulary's early stop.
func answerReadingAll(text string) (routeKind, bool) {
	words := replyWords(text)
	switch {
	case len(words) == 0:
	case covers(words, yesTable):
		return routeAffirm, holds(words, thanksTable)
	case covers(words, noTable):
		return routeDeny, holds(words, thanksTable)
	}
	return routeText, false
}
