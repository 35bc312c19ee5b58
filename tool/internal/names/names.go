// Package names finds which people, columns or lists a user's words can
// mean among the live names of a tool's data. Text is folded first (lower
// case, "ё" as "е", surrounding quotes dropped, runs of white space made
// one space); each matcher then tries stages from strict to tolerant and
// stops at the first stage with any match, so a strict match is never
// diluted by tolerant ones. The most tolerant stage accepts Russian
// declension of names ("Ольге", "Дмитрия Иванова") without a dictionary.
//
// It only returns candidates. Turning one match into a value, several into
// an ambiguous result and none into not found, and the texts saying so,
// belong to each tool; so do the forms of ids and card references, which
// differ between tools.
//
// Every function here is safe for concurrent use; those taking functions
// are when the functions they are given are.
package names

import (
	"strings"
	"unicode/utf8"
)

const quoteChars = `"'«»“”„‘’`

// Fold returns s in the form names are compared in: lower case, "ё" as
// "е", surrounding white space and quotes dropped, inner runs of white
// space made one space.
func Fold(s string) string {
	s = strings.ReplaceAll(strings.ToLower(s), "ё", "е")
	s = strings.Trim(strings.TrimSpace(s), quoteChars)
	return strings.Join(strings.Fields(s), " ")
}

// minStem is the shortest stem the tolerant match compares.
const minStem = 4

// stemEqual reports whether two folded words are equal or become equal
// after dropping up to two trailing letters from each, with at least
// minStem letters left: "дмитрия" ~ "дмитрий", "ольге" ~ "ольга". It covers
// Russian declension of names without a dictionary.
func stemEqual(a, b string) bool {
	if a == b {
		return true
	}
	ra, rb := []rune(a), []rune(b)
	for n := max(len(ra), len(rb)) - 2; n <= min(len(ra), len(rb)); n++ {
		if n >= minStem && string(ra[:n]) == string(rb[:n]) {
			return true
		}
	}
	return false
}

func exactEqual(a, b string) bool { return a == b }

// wordsMatch reports whether every query word matches a different word of
// name under eq.
func wordsMatch(query, name []string, eq func(a, b string) bool) bool {
	if len(query) == 0 || len(query) > len(name) {
		return false
	}
	used := make([]bool, len(name))
	for _, q := range query {
		found := false
		for i, w := range name {
			if !used[i] && eq(q, w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// selfWords are the folded values that mean the caller.
var selfWords = map[string]bool{
	"me": true, "myself": true, "я": true, "меня": true, "мне": true, "мной": true, "себя": true, "себе": true,
}

// IsSelf reports whether q means the caller: "me", "myself" or a form of
// the Russian "я" ("меня", "мне", "мной", "себя", "себе"), in any case and
// with surrounding quotes or spaces.
func IsSelf(q string) bool { return selfWords[Fold(q)] }

// First returns the items accepted by the first stage that accepts any,
// in their order; nil when no stage accepts one.
func First[T any](items []T, stages ...func(T) bool) []T {
	for _, accept := range stages {
		var out []T
		for _, it := range items {
			if accept(it) {
				out = append(out, it)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// People returns the people query can mean, from the first stage that
// matches: each of keys in order (an id, an e-mail or a handle, compared
// by the caller with the folded query), then a full name, then every
// query word a different name word (first name, last name, both in any
// order), then the same with declension tolerance. namesOf returns the
// names a person may be called by; any of them may match. An empty query
// means nobody.
func People[T any](people []T, query string, namesOf func(T) []string, keys ...func(p T, folded string) bool) []T {
	q := Fold(query)
	if q == "" {
		return nil
	}
	qw := strings.Fields(q)
	anyName := func(p T, match func(folded string) bool) bool {
		for _, n := range namesOf(p) {
			if match(Fold(n)) {
				return true
			}
		}
		return false
	}
	stages := make([]func(T) bool, 0, len(keys)+3)
	for _, key := range keys {
		stages = append(stages, func(p T) bool { return key(p, q) })
	}
	stages = append(stages,
		func(p T) bool { return anyName(p, func(n string) bool { return n == q }) },
		func(p T) bool {
			return anyName(p, func(n string) bool { return wordsMatch(qw, strings.Fields(n), exactEqual) })
		},
		func(p T) bool {
			return anyName(p, func(n string) bool { return wordsMatch(qw, strings.Fields(n), stemEqual) })
		},
	)
	return First(people, stages...)
}

// Labels returns the items whose label query can mean, such as a board's
// columns or lists: the exact label, then labels starting with the query,
// then labels whose words each query word matches with declension
// tolerance ("в работу" ~ "В работе"). An empty query means none.
func Labels[T any](items []T, query string, label func(T) string) []T {
	q := Fold(query)
	if q == "" {
		return nil
	}
	qw := strings.Fields(q)
	return First(items,
		func(it T) bool { return Fold(label(it)) == q },
		func(it T) bool { return strings.HasPrefix(Fold(label(it)), q) },
		func(it T) bool { return wordsMatch(qw, strings.Fields(Fold(label(it))), stemEqual) },
	)
}

// TitleAgrees reports whether folded (a Fold-ed title, as in a "title (id)"
// reference) names the object titled title: the same title, or, from three
// characters on, a part of it, as a model shortens a long title. Tools
// refuse an id whose title does not agree with the words beside it.
func TitleAgrees(title, folded string) bool {
	t := Fold(title)
	return t == folded || (utf8.RuneCountInString(folded) >= 3 && strings.Contains(t, folded))
}
