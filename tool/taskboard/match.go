package taskboard

import (
	"regexp"
	"strings"
)

// Matching is done on folded text: lower case, "ё" as "е", surrounding
// quotes dropped and runs of white space collapsed. Each matcher tries
// stages from strict to tolerant and stops at the first stage with any
// match, so a strict match is never diluted by tolerant ones; the caller
// turns one match into a value, several into an ambiguous result and none
// into not found.

const quoteChars = `"'«»“”„‘’`

// norm folds s for comparison.
func norm(s string) string {
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

// tokensMatch reports whether every query word matches a different word of
// name under eq.
func tokensMatch(query, name []string, eq func(a, b string) bool) bool {
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

func exactEqual(a, b string) bool { return a == b }

// selfWords are the query values that mean the caller.
var selfWords = map[string]bool{
	"me": true, "myself": true, "я": true, "меня": true, "мне": true, "мной": true, "себя": true, "себе": true,
}

// isSelf reports whether an assignee value means the caller.
func isSelf(q string) bool { return selfWords[norm(q)] }

// matchMembers returns the members query can mean, from the first stage
// that matches: id, full name, every word a name word (first name, last
// name, both in any order), then the same with declension tolerance.
func matchMembers(members []Member, query string) []Member {
	q := norm(query)
	if q == "" {
		return nil
	}
	qt := strings.Fields(q)
	stages := []func(m Member) bool{
		func(m Member) bool { return norm(m.ID) == q },
		func(m Member) bool { return norm(m.Name) == q },
		func(m Member) bool { return tokensMatch(qt, strings.Fields(norm(m.Name)), exactEqual) },
		func(m Member) bool { return tokensMatch(qt, strings.Fields(norm(m.Name)), stemEqual) },
	}
	for _, match := range stages {
		var out []Member
		for _, m := range members {
			if match(m) {
				out = append(out, m)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// matchColumns returns the columns query can mean: exact, then prefix,
// then every word matching a column word with declension tolerance
// ("в работу" ~ "В работе").
func matchColumns(cols []string, query string) []string {
	q := norm(query)
	if q == "" {
		return nil
	}
	qt := strings.Fields(q)
	stages := []func(c string) bool{
		func(c string) bool { return norm(c) == q },
		func(c string) bool { return strings.HasPrefix(norm(c), q) },
		func(c string) bool { return tokensMatch(qt, strings.Fields(norm(c)), stemEqual) },
	}
	for _, match := range stages {
		var out []string
		for _, c := range cols {
			if match(c) {
				out = append(out, c)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// cardRef is a card argument taken apart.
type cardRef struct {
	id        string // an id to look up first (from a URL, a trailing "(id)" or the value itself)
	fromURL   bool   // the value held "/c/<id>": only the id may match
	title     string // the value folded for title matching
	bareTitle string // the title without a trailing "(id)", tried when title matches nothing
}

var (
	idPattern       = regexp.MustCompile(`^[a-z0-9]{4,32}$`)
	trailingIDMatch = regexp.MustCompile(`\(\s*#?([a-zA-Z0-9]{4,32})\s*\)\s*$`)
)

// parseCardRef reads a card argument: a card URL (anything holding
// "/c/<id>"), a title followed by "(id)" as candidates are listed, a bare
// id, or a title.
func parseCardRef(s string) cardRef {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "/c/"); i >= 0 {
		rest := s[i+len("/c/"):]
		if j := strings.IndexAny(rest, "/?# \t\r\n"); j >= 0 {
			rest = rest[:j]
		}
		return cardRef{id: strings.ToLower(rest), fromURL: true}
	}
	ref := cardRef{title: norm(s)}
	if m := trailingIDMatch.FindStringSubmatchIndex(s); m != nil {
		ref.id = strings.ToLower(s[m[2]:m[3]])
		ref.bareTitle = norm(s[:m[0]])
	} else if id := strings.ToLower(strings.TrimPrefix(s, "#")); idPattern.MatchString(id) {
		ref.id = id
	}
	return ref
}

// cardKey is what title matching needs to know of a card.
type cardKey struct {
	ID     string
	Title  string
	Status CardStatus
}

// matchCardTitles returns the cards a folded title can mean: an exact
// title among all cards, then a substring of the title among open cards.
func matchCardTitles(cards []cardKey, title string) []cardKey {
	if title == "" {
		return nil
	}
	var out []cardKey
	for _, c := range cards {
		if norm(c.Title) == title {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, c := range cards {
		if c.Status == CardOpen && strings.Contains(norm(c.Title), title) {
			out = append(out, c)
		}
	}
	return out
}
