package calendar

import "github.com/arbiterhq/arbiter/tool/internal/names"

// Members are matched by the task board's rules (tool/internal/names):
// text is folded and stages run from strict to tolerant, the first stage
// with any match winning, so a strict match is never diluted by tolerant
// ones. One match is the member, several are an ambiguous result, none is
// not found.

// isSelf reports whether a participant value means the caller: the words
// names.IsSelf knows, and a bare "I".
func isSelf(q string) bool { return names.IsSelf(q) || names.Fold(q) == "i" }

// matchMembers returns the members query can mean, from the first stage
// that matches: id, e-mail, full name, every word a name word (first name,
// last name, both in any order), then the same with declension tolerance.
func matchMembers(members []Member, query string) []Member {
	return names.People(members, query, func(m Member) []string { return []string{m.Name} },
		func(m Member, q string) bool { return names.Fold(m.ID) == q },
		func(m Member, q string) bool { return m.Email != "" && names.Fold(m.Email) == q })
}
