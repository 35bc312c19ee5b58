package intent

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Lexicon is a router's word lists, compiled: the words of its intercepts,
// guards and web-search detector. They are a deployment's data — the
// router's configuration names them (router.words or router.words_file) —
// so the engine itself knows no language's words; what is code here is how
// the lists combine (a buyer is someone with a buying word and no selling
// one). A nil Lexicon, like a missing list, matches nothing.
type Lexicon struct {
	lists map[string]Set
}

// Lists are the names of a lexicon's lists and what each holds.
var Lists = map[string]string{
	"markers":        "words that make a short reply a new task rather than the answer to a skill's question",
	"buy":            "words of someone who buys",
	"sell":           "words of someone who sells (they undo buy)",
	"where_to_get":   "questions about where to get something: information, not a product search",
	"niche_goods":    "goods a product search serves badly",
	"create_verbs":   "verbs that ask to create content (with a content noun)",
	"content_nouns":  "what content is (a post, an article)",
	"delete":         "an explicit request to delete",
	"edit_verbs":     "verbs that edit an open document",
	"new":            "words that ask for a new document instead (they undo edit_verbs)",
	"other_task":     "words that point an edit verb elsewhere than the open document",
	"leave_skill":    "phrases that leave the current skill",
	"scene":          "words that put a person somewhere or make them someone (a photo to draw)",
	"self":           "words that say the person is the user",
	"describe":       "words that ask what a photo shows instead (they undo scene)",
	"settings":       "what a counter's settings are made of, as opposed to its figures",
	"web_search":     "what people ask a search engine",
	"question_words": "words that start a question a search may answer",
}

// needs are the lists each rule of a router cannot do without, by the
// rule's name; the other lists of a rule only narrow it.
var needs = map[string][]string{
	"skill_interview":  {"markers"},
	"open_document":    {"edit_verbs"},
	"photo":            {"scene", "self"},
	"info_question":    {"where_to_get"},
	"buying":           {"buy"},
	"creation":         {"create_verbs", "content_nouns"},
	"settings_request": {"settings"},
	"explicit_delete":  {"delete"},
	"web_search":       {"web_search"},
	// A chat leaves a skill by its words: a router with skills needs them.
	"skills": {"leave_skill"},
}

// CompileLexicon compiles word lists by name (see Lists); it fails on a
// name it does not know and on a pattern that is not one.
func CompileLexicon(lists map[string][]string) (*Lexicon, error) {
	l := &Lexicon{lists: map[string]Set{}}
	for _, name := range slices.Sorted(maps.Keys(lists)) {
		if _, ok := Lists[name]; !ok {
			return nil, fmt.Errorf("unknown word list %q (one of: %s)", name, strings.Join(slices.Sorted(maps.Keys(Lists)), ", "))
		}
		set := make(Set, 0, len(lists[name]))
		for _, spec := range lists[name] {
			p, err := compile(spec)
			if err != nil {
				return nil, fmt.Errorf("word list %s: %w", name, err)
			}
			set = append(set, p)
		}
		l.lists[name] = set
	}
	return l, nil
}

// List is the named list, nil when the lexicon has none.
func (l *Lexicon) List(name string) Set {
	if l == nil {
		return nil
	}
	return l.lists[name]
}

// Missing are the lists the named rule needs that the lexicon lacks.
func (l *Lexicon) Missing(rule string) []string {
	var out []string
	for _, name := range needs[rule] {
		if len(l.List(name)) == 0 {
			out = append(out, name)
		}
	}
	return out
}

func (l *Lexicon) has(list, text string) bool { return l.List(list).First(text) != "" }

// Marker reports whether text holds a marker of a new task.
func (l *Lexicon) Marker(text string) bool { return l.has("markers", text) }

// Buying reports whether text asks to buy and does not speak of selling.
func (l *Lexicon) Buying(text string) bool { return l.has("buy", text) && !l.has("sell", text) }

// InfoQuestion reports whether text asks where to get something, or is
// about goods a product search serves badly; it names which.
func (l *Lexicon) InfoQuestion(text string) (bool, string) {
	for _, list := range []string{"where_to_get", "niche_goods"} {
		if p := l.List(list).First(text); p != "" {
			return true, p
		}
	}
	return false, ""
}

// CreationRequest reports whether text asks to create content: a creation
// verb and a content noun.
func (l *Lexicon) CreationRequest(text string) bool {
	return l.has("create_verbs", text) && l.has("content_nouns", text)
}

// DeleteRequest reports whether text explicitly asks to delete.
func (l *Lexicon) DeleteRequest(text string) bool { return l.has("delete", text) }

// EditRequest reports whether text is an unambiguous edit of what is open:
// an edit verb, no request for something new, and none of the words of
// another task.
func (l *Lexicon) EditRequest(text string) bool {
	return l.has("edit_verbs", text) && !l.has("new", text) && !l.has("other_task", text)
}

// LeaveSkill reports whether text asks to leave the current skill.
func (l *Lexicon) LeaveSkill(text string) bool { return l.has("leave_skill", text) }

// PhotoScene reports whether text, sent with a photo, asks to draw the
// user into a scene rather than to say what the photo shows.
func (l *Lexicon) PhotoScene(text string) bool {
	return l.has("scene", text) && l.has("self", text) && !l.has("describe", text)
}

// SettingsRequest reports whether text is about a counter's settings
// rather than its figures.
func (l *Lexicon) SettingsRequest(text string) bool { return l.has("settings", text) }

// WebSearch reports whether text reads like a question for a search
// engine, and why: the pattern of web_search it holds, or "question" for a
// question longer than 15 characters with a question mark and one of
// question_words. It knows no context: a pattern fires wherever its words
// stand, needed or not (a known limit).
func (l *Lexicon) WebSearch(text string) (bool, string) {
	if p := l.List("web_search").First(text); p != "" {
		return true, p
	}
	if strings.Contains(text, "?") && utf8.RuneCountInString(strings.TrimSpace(text)) > 15 && l.has("question_words", text) {
		return true, "question"
	}
	return false, ""
}
