package interview

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/runenames"
)

// The question marks are derived again here from the character names of
// Unicode (punctuation and other symbols whose names have the words
// QUESTION and MARK, or INTERROBANG; not inverted, not initial) and must
// equal the table.
func TestQuestionMarksAreUnicodes(t *testing.T) {
	derived := map[rune]bool{}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !unicode.In(r, unicode.P, unicode.So) {
			continue
		}
		words := strings.Fields(runenames.Name(r))
		if (slices.Contains(words, "QUESTION") && slices.Contains(words, "MARK") || slices.Contains(words, "INTERROBANG")) &&
			!slices.Contains(words, "INVERTED") && !slices.Contains(words, "INITIAL") {
			derived[r] = true
		}
	}
	for r := range derived {
		if !questionMarks[r] {
			t.Errorf("U+%04X %s is a question mark of Unicode %s and is missing", r, runenames.Name(r), unicode.Version)
		}
	}
	for r := range questionMarks {
		if !derived[r] {
			t.Errorf("U+%04X %s is no question mark of Unicode %s", r, runenames.Name(r), unicode.Version)
		}
	}
	if len(derived) < 20 {
		t.Errorf("only %d question marks derived: the names did not load", len(derived))
	}
}

func TestFirstQuestionInEveryScript(t *testing.T) {
	for _, tc := range []struct{ in, first, rest string }{
		{"Какая версия? И какая база?", "Какая версия?", "И какая база?"},
		{"Какая версия?", "Какая версия?", ""},
		{"你用哪个版本？数据库呢？", "你用哪个版本？", "数据库呢？"},
		{"ما الإصدار؟ وما القاعدة؟", "ما الإصدار؟", "وما القاعدة؟"},
		{"Ποια έκδοση\u037e Και ποια βάση\u037e", "Ποια έκδοση\u037e", "Και ποια βάση\u037e"},
		{"Ո՞ր տարբերակն է։ Ո՞ր բազան է։", "Ո՞ր տարբերակն է։", "Ո՞ր բազան է։"},
		{"Really⁈ And then⁇", "Really⁈", "And then⁇"},
		{"«Laravel 10?» Or 11?", "«Laravel 10?»", "Or 11?"},
		{"Which one?! The other?", "Which one?!", "The other?"},
		{"No question here.", "No question here.", ""},
	} {
		first, rest := firstQuestion(tc.in)
		if first != tc.first || rest != tc.rest {
			t.Errorf("firstQuestion(%q) = %q, %q; want %q, %q", tc.in, first, rest, tc.first, tc.rest)
		}
	}
}

func TestEndsInQuestion(t *testing.T) {
	questions := []string{
		"Какой у вас стек?", "Which framework do you use?  ", "用哪个版本？", "ما الإصدار؟", "Ποια έκδοση\u037e",
		"Ո՞ր տարբերակն է։", "Really⁈", "«Какой стек?»", "Какой стек?\u200b", "Какой стек? 🙂", "Which one❓", "Seriously‽",
	}
	for _, q := range questions {
		if !endsInQuestion(q) {
			t.Errorf("%q is a question", q)
		}
	}
	results := []string{
		"План сайта: Go, Postgres, месяц.", "Вопрос «какой стек?» решён: Go.", "Готово ✅", "",
		"FAQ: Как начать? Установите пакет.", "¿Listo? Sí, listo.",
	}
	for _, r := range results {
		if endsInQuestion(r) {
			t.Errorf("%q is no question", r)
		}
	}
	for r := range questionMarks {
		if q := fmt.Sprintf("Вопрос%c", r); !endsInQuestion(q) {
			t.Errorf("%q (U+%04X) is a question", q, r)
		}
	}
}
