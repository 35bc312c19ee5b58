package taskboard

import (
	"regexp"
	"strings"

	"github.com/arbiterhq/arbiter/tool/internal/names"
)

// Names are matched by tool/internal/names: folded text, stages from
// strict to tolerant, the first stage with any match winning. The caller
// turns one match into a value, several into an ambiguous result and none
// into not found.

// matchMembers returns the members query can mean, from the first stage
// that matches: id, full name, every word a name word (first name, last
// name, both in any order), then the same with declension tolerance.
func matchMembers(members []Member, query string) []Member {
	return names.People(members, query, func(m Member) []string { return []string{m.Name} },
		func(m Member, q string) bool { return names.Fold(m.ID) == q })
}

// matchColumns returns the columns query can mean: exact, then prefix,
// then every word matching a column word with declension tolerance
// ("в работу" ~ "В работе").
func matchColumns(cols []string, query string) []string {
	return names.Labels(cols, query, func(c string) string { return c })
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
	ref := cardRef{title: names.Fold(s)}
	if m := trailingIDMatch.FindStringSubmatchIndex(s); m != nil {
		ref.id = strings.ToLower(s[m[2]:m[3]])
		ref.bareTitle = names.Fold(s[:m[0]])
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
	return names.First(cards,
		func(c cardKey) bool { return names.Fold(c.Title) == title },
		func(c cardKey) bool { return c.Status == CardOpen && strings.Contains(names.Fold(c.Title), title) })
}
