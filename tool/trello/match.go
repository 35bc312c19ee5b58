package trello

import (
	"strings"
)

// The matching rules below are the embedded board's (tool/taskboard,
// match.go), kept identical so a tenant sees the same behaviour on either
// backend: text is folded (lower case, "ё" as "е", surrounding quotes
// dropped, white space collapsed), and each matcher tries stages from
// strict to tolerant and stops at the first stage with any match. One
// match becomes a value, several an ambiguous result and none not found.

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
// minStem letters left: "дмитрия" ~ "дмитрий", "ольге" ~ "ольга".
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
	q := norm(query)
	if q == "" {
		return nil
	}
	handle := strings.TrimPrefix(q, "@")
	qt := strings.Fields(q)
	anyName := func(p boardPerson, f func(name string) bool) bool {
		for _, n := range p.names {
			if f(norm(n)) {
				return true
			}
		}
		return false
	}
	stages := []func(p boardPerson) bool{
		func(p boardPerson) bool {
			return norm(p.member.ID) == q || (p.member.Username != "" && norm(p.member.Username) == handle)
		},
		func(p boardPerson) bool { return anyName(p, func(n string) bool { return n == q }) },
		func(p boardPerson) bool {
			return anyName(p, func(n string) bool { return tokensMatch(qt, strings.Fields(n), exactEqual) })
		},
		func(p boardPerson) bool {
			return anyName(p, func(n string) bool { return tokensMatch(qt, strings.Fields(n), stemEqual) })
		},
	}
	for _, match := range stages {
		var out []boardPerson
		for _, p := range people {
			if match(p) {
				out = append(out, p)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// matchLists returns the lists query can mean: exact name, then prefix,
// then every word matching a list word with declension tolerance
// ("в работу" ~ "В работе").
func matchLists(lists []apiList, query string) []apiList {
	q := norm(query)
	if q == "" {
		return nil
	}
	qt := strings.Fields(q)
	stages := []func(name string) bool{
		func(name string) bool { return name == q },
		func(name string) bool { return strings.HasPrefix(name, q) },
		func(name string) bool { return tokensMatch(qt, strings.Fields(name), stemEqual) },
	}
	for _, match := range stages {
		var out []apiList
		for _, l := range lists {
			if match(norm(l.Name)) {
				out = append(out, l)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// matchCardTitles returns the open cards a folded title can mean: an exact
// title, then a substring of the title.
func matchCardTitles(cards []apiCard, title string) []apiCard {
	if title == "" {
		return nil
	}
	var out []apiCard
	for _, c := range cards {
		if !c.Closed && norm(c.Name) == title {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, c := range cards {
		if !c.Closed && strings.Contains(norm(c.Name), title) {
			out = append(out, c)
		}
	}
	return out
}
