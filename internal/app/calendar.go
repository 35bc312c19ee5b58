package app

import (
	"fmt"

	"golang.org/x/oauth2"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool/calendar"
)

// newCalendar builds the calendar tools on the embedded store or on Google
// Calendar with each user's own token.
func newCalendar(cfg *config.Config, cal *config.Calendar, st *sqlitestore.Store, getenv func(string) string, opts Options) (*calendar.Calendar, error) {
	members := map[string][]calendar.Member{}
	zones := map[string]string{}
	type userKey struct{ tenant, user string }
	tokens := map[userKey]string{}
	for _, t := range cfg.Tenants {
		zones[t.ID] = t.Timezone
		for _, u := range t.Users {
			m := calendar.Member{ID: u.ID, Name: u.Name, Timezone: u.Timezone}
			if u.Google != nil {
				m.Email = u.Google.Email
				if tok := getenv(u.Google.TokenEnv); tok != "" {
					tokens[userKey{t.ID, u.ID}] = tok
				}
			}
			members[t.ID] = append(members[t.ID], m)
		}
	}
	c := calendar.Config{
		DB:             st.DB(),
		Members:        func(tenant string) []calendar.Member { return members[tenant] },
		TenantTimezone: func(tenant string) string { return zones[tenant] },
		Now:            opts.Now,
	}
	if cal.Backend == "google" {
		g, err := calendar.NewGoogle(calendar.GoogleConfig{
			BaseURL: cal.GoogleBaseURL,
			Tokens: func(tenant, user string) (oauth2.TokenSource, bool) {
				tok, ok := tokens[userKey{tenant, user}]
				if !ok {
					return nil, false
				}
				return calendar.StaticToken(tok), true
			},
		})
		if err != nil {
			return nil, fmt.Errorf("google calendar: %w", err)
		}
		c.Backend = g
	}
	out, err := calendar.New(c)
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	return out, nil
}
