package intent

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// corpus reads a file of testdata/claims: one reply a line, "#" starts a
// comment line, and {a|b} stands for one line with a and one with b.
func corpus(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "claims", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, expand(line)...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var alternation = regexp.MustCompile(`\{([^{}]*)\}`)

func expand(line string) []string {
	loc := alternation.FindStringSubmatchIndex(line)
	if loc == nil {
		return []string{line}
	}
	var out []string
	for _, alt := range strings.Split(line[loc[2]:loc[3]], "|") {
		out = append(out, expand(line[:loc[0]]+alt+line[loc[1]:])...)
	}
	return out
}

// disguises are the ways a reply can hide a phrase from a check that reads
// strings: each takes a reply and returns it disguised.
var disguises = map[string]func(string) string{
	"zero-width space": func(s string) string { return inWords(s, "\u200b") },
	"word joiner":      func(s string) string { return inWords(s, "\u2060") },
	"soft hyphen":      func(s string) string { return inWords(s, "\u00ad") },
	"hyphen":           func(s string) string { return inWords(s, "-") },
	"line hyphenation": func(s string) string { return inWords(s, "-\n") },
	"markdown bold":    func(s string) string { return eachWord(s, func(w string) string { return "**" + w + "**" }) },
	"markdown inside":  func(s string) string { return inWords(s, "__") },
	"html bold":        func(s string) string { return eachWord(s, func(w string) string { return "<b>" + w + "</b>" }) },
	"code span":        func(s string) string { return "`" + s + "`" },
	"stress mark":      func(s string) string { return inWords(s, "\u0301") },
	"upper case":       strings.ToUpper,
	"em dash":          func(s string) string { return strings.Replace(s, " ", " — ", 1) },
	"joined words":     func(s string) string { return strings.Replace(s, " ", "-", 1) },
	"other script": func(s string) string {
		return strings.NewReplacer("о", "o", "а", "a", "е", "e", "р", "p", "с", "c", "у", "y", "х", "x",
			"o", "о", "a", "а", "e", "е", "p", "р", "c", "с").Replace(s)
	},
	"full width": func(s string) string {
		return strings.Map(func(r rune) rune {
			if r > ' ' && r < 0x7f {
				return r + 0xFEE0
			}
			return r
		}, s)
	},
}

// inWords puts sep in the middle of every word of five letters or more.
func inWords(s, sep string) string {
	return eachWord(s, func(w string) string {
		if n := utf8.RuneCountInString(w); n >= 5 {
			r := []rune(w)
			return string(r[:n/2]) + sep + string(r[n/2:])
		}
		return w
	})
}

func eachWord(s string, f func(string) string) string {
	var b strings.Builder
	word := []rune{}
	flush := func() {
		if len(word) > 0 {
			b.WriteString(f(string(word)))
			word = word[:0]
		}
	}
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			word = append(word, r)
			continue
		}
		flush()
		b.WriteRune(r)
	}
	flush()
	return b.String()
}

func asserted(as []Assertion, outcome string) bool {
	for _, a := range as {
		if a.Outcome == outcome {
			return true
		}
	}
	return false
}

// The corpus of testdata/claims: every phrasing that asserts an outcome,
// plain or disguised, is found as that outcome; of those that do not,
// at most 2 % are taken for an assertion.
func TestClaimsCorpus(t *testing.T) {
	c, err := CompileClaims(Outcomes)
	if err != nil {
		t.Fatal(err)
	}
	var asserting, assertingHeld, plain int
	for _, line := range corpus(t, "asserting.txt") {
		plain++
		outcome, reply, ok := strings.Cut(line, ": ")
		if !ok || Outcomes[outcome] == nil {
			t.Fatalf("asserting.txt: %q names no outcome", line)
		}
		variants := map[string]string{"plain": reply}
		for name, d := range disguises {
			variants[name] = d(reply)
		}
		for name, v := range variants {
			asserting++
			if asserted(c.Find(nil, v), outcome) {
				assertingHeld++
			} else {
				t.Errorf("%s (%s) %q: not found as %s", outcome, name, v, outcome)
			}
		}
	}
	for _, reply := range corpus(t, "completion.txt") {
		plain++
		for name, v := range map[string]string{"plain": reply, "zero-width space": disguises["zero-width space"](reply), "other script": disguises["other script"](reply)} {
			asserting++
			if asserted(c.Find(nil, v), "") {
				assertingHeld++
			} else {
				t.Errorf("completion (%s) %q: not found", name, v)
			}
		}
	}
	var others, othersHeld, othersPlain int
	for _, reply := range corpus(t, "not_asserting.txt") {
		othersPlain++
		for name, v := range map[string]string{"plain": reply, "zero-width space": disguises["zero-width space"](reply)} {
			others++
			if as := c.Find(nil, v); len(as) > 0 {
				othersHeld++
				t.Logf("not asserting (%s) %q: taken for %+v", name, v, as)
			}
		}
	}
	t.Logf("asserting: %d of %d held (%.1f %%; %d phrasings and their disguises); not asserting: %d of %d held (%.1f %%; %d phrasings, plain and with a zero-width space)",
		assertingHeld, asserting, 100*float64(assertingHeld)/float64(asserting), plain, othersHeld, others, 100*float64(othersHeld)/float64(others), othersPlain)
	if plain < 300 || othersPlain < 300 {
		t.Errorf("the corpus has %d asserting and %d other phrasings; it needs 300 of each", plain, othersPlain)
	}
	if assertingHeld != asserting {
		t.Errorf("%d asserting phrasings not held", asserting-assertingHeld)
	}
	if othersHeld*50 > others {
		t.Errorf("%d of %d phrasings that assert nothing held: over 2 %%", othersHeld, others)
	}
}

// A reply with no pattern word costs no allocation.
func TestFindAllocatesNothingWithoutCandidates(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop its scratch")
	}
	c, err := CompileClaims(Outcomes)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Created the task \"check the form\" for Friday, 12:00.", "Задача «проверить форму» создана на пятницу, 12:00."} {
		var buf [4]Assertion
		if n := testing.AllocsPerRun(100, func() { _ = c.Find(buf[:0], s) }); n != 0 {
			t.Errorf("%q: %v allocations", s, n)
		}
	}
}

func BenchmarkFind(b *testing.B) {
	c, err := CompileClaims(Outcomes)
	if err != nil {
		b.Fatal(err)
	}
	for name, s := range map[string]string{
		"en_plain": "Created the task \"check the form\" for Friday, 12:00. Anything else I can help with?",
		"ru_draft": "Платёж pay_4821 на 990 RUB подтверждён. Записано расхождение: payment pay_4821 is confirmed, but the subscription was never activated. Я запросил возврат — его одобрит сотрудник, до этого деньги не возвращены.",
	} {
		b.Run(name, func(b *testing.B) {
			var buf [4]Assertion
			b.ReportAllocs()
			for b.Loop() {
				_ = c.Find(buf[:0], s)
			}
		})
	}
}
