package intent

import (
	"slices"
	"strings"
	"testing"
)

// A lexicon of a few words, in English: the rules combine whatever lists
// a deployment gives them.
func testLexicon(t *testing.T) *Lexicon {
	t.Helper()
	l, err := CompileLexicon(map[string][]string{
		"buy":            {"buy*", "looking for"},
		"sell":           {"sell*"},
		"where_to_get":   {"where to buy|get"},
		"niche_goods":    {"spare part*"},
		"edit_verbs":     {"add", "fix"},
		"new":            {"new"},
		"other_task":     {"calendar"},
		"web_search":     {"weather", "price* of"},
		"question_words": {"what|how"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLexiconRules(t *testing.T) {
	l := testLexicon(t)
	for _, tt := range []struct {
		rule string
		got  bool
		want bool
	}{
		{"buying", l.Buying("I'm looking for a bike"), true},
		{"buying and selling", l.Buying("buy my bike, I sell it"), false},
		{"edit", l.EditRequest("fix the title"), true},
		{"edit of something new", l.EditRequest("add a new sheet"), false},
		{"edit elsewhere", l.EditRequest("add a meeting to the calendar"), false},
		{"no list: no creation", l.CreationRequest("write a post"), false},
		{"nil lexicon", (*Lexicon)(nil).Buying("buy"), false},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.rule, tt.got, tt.want)
		}
	}
	if ok, why := l.InfoQuestion("where to get spare parts"); !ok || why != "where to buy|get" {
		t.Errorf("InfoQuestion = %v %q: the first list that holds the text names it", ok, why)
	}
	for text, want := range map[string]string{"the weather in Oslo": "weather", "what is the best route to the airport?": "question", "what?": "", "hello there, my friend?": ""} {
		if _, why := l.WebSearch(text); why != want {
			t.Errorf("WebSearch(%q) = %q, want %q", text, why, want)
		}
	}
}

// A lexicon is data: a name it does not know, or a pattern that would
// match every word, is an error, not a rule that fires on anything.
func TestCompileLexiconErrors(t *testing.T) {
	for _, tt := range []struct {
		lists map[string][]string
		want  string
	}{
		{map[string][]string{"marker": {"mail"}}, `unknown word list "marker"`},
		{map[string][]string{"buy": {"*"}}, "an empty word"},
		{map[string][]string{"buy": {"buy|"}}, "an empty word"},
		{map[string][]string{"sell": {"  "}}, "no words"},
	} {
		if _, err := CompileLexicon(tt.lists); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want %q", tt.lists, err, tt.want)
		}
	}
}

// A rule names the lists it cannot do without; the rest only narrow it.
func TestLexiconMissing(t *testing.T) {
	l := testLexicon(t)
	if got := l.Missing("creation"); !slices.Equal(got, []string{"create_verbs", "content_nouns"}) {
		t.Errorf("creation misses %v", got)
	}
	if got := l.Missing("buying"); got != nil {
		t.Errorf("buying misses %v", got)
	}
	if got := (*Lexicon)(nil).Missing("photo"); !slices.Equal(got, []string{"scene", "self"}) {
		t.Errorf("photo without a lexicon misses %v", got)
	}
	if got := l.Missing("repeated_call"); got != nil {
		t.Errorf("a rule of no words misses %v", got)
	}
	for rule, lists := range needs {
		for _, name := range lists {
			if _, ok := Lists[name]; !ok {
				t.Errorf("rule %s needs %q, which is no list", rule, name)
			}
		}
	}
}

// Go's \b knows only ASCII letters; the patterns write boundaries out.
func TestCyrillicBoundaries(t *testing.T) {
	p := Compile("отзыв*")
	for _, s := range []string{"отзывы", "«отзывы»", "(отзыв)", "отзыв,", "ОТЗЫВ"} {
		if !p.Match(s) {
			t.Errorf("%q does not match %q", p.Spec, s)
		}
	}
	for _, s := range []string{"безотзывный", "заотзыв"} {
		if p.Match(s) {
			t.Errorf("%q matches inside the word %q", p.Spec, s)
		}
	}
	if !Compile("счет").Match("Счёт") {
		t.Error("ё is not read as е")
	}
}
