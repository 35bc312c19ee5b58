package chat

import "strings"

// DefaultLanguage is the language of the server's own texts when nobody
// says one: not the user, not the tenant (a tenant sets its language), not
// the channel.
const DefaultLanguage = "en"

// Languages are the languages the server's own texts are written in.
var Languages = []string{"en", "ru"}

// Language is the one rule every part of the server picks a reply's
// language by: the first of candidates — most specific first: the user's,
// the tenant's, a client's own such as Telegram's language_code — that is
// one of Languages ("ru-RU" and "EN_us" count as ru and en), else
// DefaultLanguage.
func Language(candidates ...string) string {
	for _, l := range candidates {
		l = strings.ToLower(strings.TrimSpace(l))
		if i := strings.IndexAny(l, "-_"); i > 0 {
			l = l[:i]
		}
		for _, known := range Languages {
			if l == known {
				return known
			}
		}
	}
	return DefaultLanguage
}
