package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// Tenant is one isolated customer.
type Tenant struct {
	ID            string `yaml:"id"`
	Strategy      string `yaml:"strategy"`
	Timezone      string `yaml:"timezone"`
	Language      string `yaml:"language"`
	AssistantName string `yaml:"assistant_name"`
	// Assistant names the profile of assistants this tenant's turns run
	// under; empty: the single-decision assistant.
	Assistant string          `yaml:"assistant"`
	Roles     map[string]Role `yaml:"roles"`
	Users     []User          `yaml:"users"`
}

// Role lists the tools a role is shown (names or globs).
type Role struct {
	Tools []string `yaml:"tools"`
}

// User is a tenant's user.
type User struct {
	ID     string      `yaml:"id"`
	Trello *UserTrello `yaml:"trello"`
	Google *UserGoogle `yaml:"google"`
	// TelegramIDs are the user's Telegram user ids.
	TelegramIDs []int64 `yaml:"telegram_ids"`
	// ChannelScopes are the scopes of the user on channels without API
	// keys (Telegram); default read, write:safe, write:full — risky
	// actions still wait for the user's own confirmation.
	ChannelScopes []string `yaml:"channel_scopes"`
	Name          string   `yaml:"name"`
	Role          string   `yaml:"role"`
	Timezone      string   `yaml:"timezone"`
	Language      string   `yaml:"language"`
	Keys          []Key    `yaml:"keys"`
}

// Key is an API key of a user with its scopes.
type Key struct {
	Token    string   `yaml:"token"`
	TokenEnv string   `yaml:"token_env"`
	Scopes   []string `yaml:"scopes"`
}

// UserTrello links a user to Trello.
type UserTrello struct {
	// Member is the user's Trello username or member id.
	Member   string `yaml:"member"`
	TokenEnv string `yaml:"token_env"`
}

// UserGoogle links a user to Google Calendar.
type UserGoogle struct {
	Email    string `yaml:"email"`
	TokenEnv string `yaml:"token_env"` // an OAuth access token with a calendar scope
}

// ResolveToken returns a key's token, reading token_env through getenv.
func ResolveToken(k Key, getenv func(string) string) string {
	if k.TokenEnv != "" {
		return getenv(k.TokenEnv)
	}
	return k.Token
}

// knownScopes are the scopes of an API key, and the risks of a tool.
var knownScopes = map[string]bool{"read": true, "write:safe": true, "write:full": true, "context:bind": true, "turns:read_all": true}

// checkTenants checks each tenant, that no two share an id and that no two
// keys of any tenants share a token.
func (v *validator) checkTenants(tenants []Tenant) {
	ids := map[string]bool{}
	tokens := map[string]string{} // a token's owner, tenant/user
	for i, t := range tenants {
		p := fmt.Sprintf("tenants[%d]", i)
		v.uniqueKey(ids, p, "id", t.ID, "tenant %q is defined twice")
		t.check(v, p, tokens)
	}
}

// check checks one tenant at path p (tenants[i]) and its users; tokens
// are the owners of the tokens seen so far.
func (t Tenant) check(v *validator, p string, tokens map[string]string) {
	if t.Strategy != "" && !v.cfg.knownStrategy(t.Strategy) {
		v.errorf(p+".strategy", "unknown strategy %q%s", t.Strategy, DidYouMean(t.Strategy, v.cfg.strategyNames()))
	}
	if _, ok := v.cfg.Assistants[t.Assistant]; t.Assistant != "" && !ok {
		v.errorf(p+".assistant", "no assistant named %q in assistants%s", t.Assistant, DidYouMean(t.Assistant, sortedKeys(v.cfg.Assistants)))
	}
	v.checkTimezone(p+".timezone", t.Timezone)
	if t.Language != "" && !slices.Contains(chat.Languages, t.Language) {
		v.errorf(p+".language", "unknown language %q (one of: %s)", t.Language, strings.Join(chat.Languages, ", "))
	}
	users := map[string]bool{}
	for j, u := range t.Users {
		up := fmt.Sprintf("%s.users[%d]", p, j)
		v.uniqueKey(users, up, "id", u.ID, "user %q is defined twice in tenant %s", t.ID)
		u.check(v, up, t, tokens)
	}
}

// check checks one user of tenant t at path p and the user's keys.
func (u User) check(v *validator, p string, t Tenant, tokens map[string]string) {
	if _, ok := t.Roles[u.Role]; !ok {
		roles := sortedKeys(t.Roles)
		v.errorf(p+".role", "role %q is not defined in tenant %s (defined: %s)%s", u.Role, t.ID, strings.Join(roles, ", "), DidYouMean(u.Role, roles))
	}
	v.checkTimezone(p+".timezone", u.Timezone)
	for k, key := range u.Keys {
		key.check(v, fmt.Sprintf("%s.keys[%d]", p, k), t.ID+"/"+u.ID, tokens)
	}
}

// check checks one API key at path p of owner (tenant/user): its token,
// unique among all keys' tokens, and its scopes.
func (k Key) check(v *validator, p, owner string, tokens map[string]string) {
	token := k.Token
	switch {
	case k.Token != "" && k.TokenEnv != "":
		v.errorf(p, "set token or token_env, not both")
	case k.TokenEnv != "":
		token = v.getenv(k.TokenEnv)
		if token == "" {
			v.errorf(p+".token_env", "environment variable %s is empty or unset", k.TokenEnv)
		}
	case k.Token == "":
		v.errorf(p, "token or token_env is required")
	}
	if token != "" && len(token) < 8 {
		v.errorf(p, "token is shorter than 8 characters")
	}
	if first, dup := tokens[token]; dup && token != "" {
		v.errorf(p, "the same token is already used by %s", first)
	}
	if token != "" {
		tokens[token] = owner
	}
	for s, scope := range k.Scopes {
		if !knownScopes[scope] {
			v.errorf(fmt.Sprintf("%s.scopes[%d]", p, s), "unknown scope %q (read, write:safe, write:full, context:bind, turns:read_all)", scope)
		}
	}
}

// checkTimezone checks that zone, at path, is a time zone this machine
// knows (empty: the default).
func (v *validator) checkTimezone(path, zone string) {
	if zone == "" {
		return
	}
	if _, err := time.LoadLocation(zone); err != nil {
		v.errorf(path, "unknown time zone %q", zone)
	}
}

// tenantIDs are the ids tenants are known by (a tenant without one
// included, as "").
func (c *Config) tenantIDs() map[string]bool {
	ids := map[string]bool{}
	for _, t := range c.Tenants {
		ids[t.ID] = true
	}
	return ids
}
