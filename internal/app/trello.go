package app

import (
	"fmt"
	"regexp"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/tool/trello"
)

// memberID is the shape of a Trello member id (as opposed to a username).
var memberID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// newTrello builds the Trello board: the default connection from the
// environment and each user's own connection where configured.
func newTrello(cfg *config.Config, tr *config.Trello, getenv func(string) string, opts Options) (*trello.Client, error) {
	type userKey struct{ tenant, user string }
	tokens := map[userKey]string{}
	members := map[string][]trello.Member{}
	for _, t := range cfg.Tenants {
		for _, u := range t.Users {
			if u.Trello == nil {
				continue
			}
			if u.Trello.TokenEnv != "" {
				if tok := getenv(u.Trello.TokenEnv); tok != "" {
					tokens[userKey{t.ID, u.ID}] = tok
				}
			}
			if m := u.Trello.Member; m != "" {
				member := trello.Member{UserID: u.ID, Name: u.Name, Username: m}
				if memberID.MatchString(m) {
					member = trello.Member{UserID: u.ID, Name: u.Name, TrelloID: m}
				}
				members[t.ID] = append(members[t.ID], member)
			}
		}
	}
	c, err := trello.New(trello.Config{
		APIBaseURL: tr.APIBaseURL,
		Key:        getenv(tr.KeyEnv),
		Token:      getenv(tr.TokenEnv),
		UserTokens: func(tenant, user string) (string, bool) {
			tok, ok := tokens[userKey{tenant, user}]
			return tok, ok
		},
		Board:    tr.Board,
		DoneList: tr.DoneList,
		Confirm:  confirmMap(tr.Confirm),
		Members:  func(tenant string) []trello.Member { return members[tenant] },
		Now:      opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("trello: %w", err)
	}
	return c, nil
}
