package calendar

import "strings"

// Member matching follows the task board's rules (tool/taskboard/match.go;
// these small pure functions are copied so the packages stay independent):
// text is folded (lower case, "ё" as "е", surrounding quotes dropped, runs
// of white space collapsed) and stages run from strict to tolerant, the
// first stage with any match winning, so a strict match is never diluted
// by tolerant ones. One match is the member, several are an ambiguous
// result, none is not found.

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
// minStem letters left: "дмитрия" ~ "дмитрий", "ольгой" ~ "ольга". It
// covers Russian declension of names without a dictionary.
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

// selfWords are the values that mean the caller.
var selfWords = map[string]bool{
	"me": true, "myself": true, "i": true, "я": true, "меня": true, "мне": true, "мной": true, "себя": true, "себе": true,
}

// isSelf reports whether a participant value means the caller.
func isSelf(q string) bool { return selfWords[norm(q)] }

// matchMembers returns the members query can mean, from the first stage
// that matches: id, e-mail, full name, every word a name word (first name,
// last name, both in any order), then the same with declension tolerance.
func matchMembers(members []Member, query string) []Member {
	q := norm(query)
	if q == "" {
		return nil
	}
	qt := strings.Fields(q)
	stages := []func(m Member) bool{
		func(m Member) bool { return norm(m.ID) == q },
		func(m Member) bool { return m.Email != "" && norm(m.Email) == q },
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
