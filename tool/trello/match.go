package trello

import (
	"strings"

	"github.com/arbiterhq/arbiter/tool/internal/names"
)

// Names are matched by the embedded board's rules (tool/internal/names),
// so a tenant sees the same behaviour on either backend: text is folded
// and each matcher tries stages from strict to tolerant, stopping at the
// first stage with any match. One match becomes a value, several an
// ambiguous result and none not found.

// boardPerson is a board member with the names it may be called by: its
// Trello full name and, when the tenant maps a user to it, that user's
// name.
type boardPerson struct {
	member apiMember
	names  []string
}

// matchMembers returns the members query can mean, from the first stage
// that matches: Trello id or username ("@" optional), a full name, every
// word a name word (first name, last name, both in any order), then the
// same with declension tolerance.
func matchMembers(people []boardPerson, query string) []boardPerson {
	return names.People(people, query, func(p boardPerson) []string { return p.names },
		func(p boardPerson, q string) bool {
			handle := strings.TrimPrefix(q, "@")
			return names.Fold(p.member.ID) == q || (p.member.Username != "" && names.Fold(p.member.Username) == handle)
		})
}

// matchLists returns the lists query can mean: exact name, then prefix,
// then every word matching a list word with declension tolerance
// ("в работу" ~ "В работе").
func matchLists(lists []apiList, query string) []apiList {
	return names.Labels(lists, query, func(l apiList) string { return l.Name })
}

// matchCardTitles returns the open cards a folded title can mean: an exact
// title, then a substring of the title.
func matchCardTitles(cards []apiCard, title string) []apiCard {
	if title == "" {
		return nil
	}
	return names.First(cards,
		func(c apiCard) bool { return !c.Closed && names.Fold(c.Name) == title },
		func(c apiCard) bool { return !c.Closed && strings.Contains(names.Fold(c.Name), title) })
}
