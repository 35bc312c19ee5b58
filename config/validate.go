package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/intent"
)

// validator collects the problems of a configuration, each with the line
// of the value at fault.
type validator struct {
	cfg    *Config
	getenv func(string) string
	errs   Errors
}

// routerWords checks a router's word lists: one source, readable, and
// lists and patterns the router knows.
func (v *validator) routerWords(p string, r *Router, dir string) {
	at := p + ".words"
	if r.WordsFile != "" {
		at = p + ".words_file"
	}
	if r.Words != nil && r.WordsFile != "" {
		v.errorf(p, "set words or words_file, not both")
	} else if words, err := r.LoadWords(dir); err != nil {
		v.errorf(at, "%v", err)
	} else if _, err := intent.CompileLexicon(words); err != nil {
		v.errorf(at, "%v", err)
	}
}

// errorf records a problem at path (see Config.Problem).
func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, v.cfg.Problem(path, format, args...))
}

var (
	knownScopes    = map[string]bool{"read": true, "write:safe": true, "write:full": true, "context:bind": true, "turns:read_all": true}
	knownOutputs   = map[string]bool{"": true, "json_schema_strict": true, "json_schema": true, "json_object": true}
	knownProtocols = map[string]bool{"": true, "json": true, "tools": true}
)

func (v *validator) validate(c *Config) {
	v.expandEnv(c)
	// Kinds themselves are the program's (server.Check): only the settings
	// of the kinds described here are checked.
	if c.Store.Kind == "redis" && c.Store.URL == "" {
		v.errorf("store", "a redis store needs url (e.g. redis://127.0.0.1:6379/0)")
	}
	if c.Journal.Kind == "postgres" && c.Journal.URL == "" {
		v.errorf("journal", "a postgres journal needs url (e.g. postgres://postgres@127.0.0.1:5432/arbiter)")
	}
	names := map[string]bool{}
	for i, m := range c.Models {
		p := fmt.Sprintf("models[%d]", i)
		if m.Name == "" {
			v.errorf(p, "name is required")
		} else if names[m.Name] {
			v.errorf(p+".name", "model name %q is used twice", m.Name)
		}
		names[m.Name] = true
		if m.Kind == "" {
			v.errorf(p, "kind is required")
		}
		if m.Model == "" {
			v.errorf(p, "model is required")
		}
		if !knownOutputs[m.Output] {
			v.errorf(p+".output", "unknown output mode %q (json_schema_strict, json_schema or json_object)", m.Output)
		}
		if !knownProtocols[m.Protocol] {
			v.errorf(p+".protocol", "unknown protocol %q (json or tools)", m.Protocol)
		}
		// Negative durations are refused when they are parsed.
		if m.MinTokenRate < 0 {
			v.errorf(p+".min_token_rate", "must not be negative (output tokens per second)")
		}
		if m.APIKey != "" && m.APIKeyEnv != "" {
			v.errorf(p, "set api_key or api_key_env, not both")
		} else if m.APIKeyEnv != "" && v.getenv(m.APIKeyEnv) == "" {
			v.errorf(p+".api_key_env", "environment variable %s is empty or unset", m.APIKeyEnv)
		}
	}
	for name, chain := range c.Strategies {
		if len(chain) == 0 {
			v.errorf("strategies."+name, "a strategy needs at least one model")
		}
		for i, m := range chain {
			if !names[m] {
				v.errorf(fmt.Sprintf("strategies.%s[%d]", name, i), "no model named %q in models%s", m, DidYouMean(m, sortedKeys(names)))
			}
		}
	}
	strategies := append(sortedKeys(c.Strategies), sortedKeys(builtinStrategies)...)
	if c.Strategy != "" && len(c.Models) > 0 && c.Strategies[c.Strategy] == nil && !builtinStrategies[c.Strategy] {
		v.errorf("strategy", "unknown strategy %q%s", c.Strategy, DidYouMean(c.Strategy, strategies))
	}
	if c.Memory.Window < 0 {
		v.errorf("memory.window", "must be positive")
	}
	v.lifetimes(c)
	if c.Limits.MaxBodyBytes < 0 {
		v.errorf("limits.max_body_bytes", "must be positive")
	}
	for name, n := range map[string]int64{"max_file_bytes": c.Limits.MaxFileBytes, "max_image_bytes": int64(c.Limits.MaxImageBytes),
		"max_pdf_bytes": int64(c.Limits.MaxPDFBytes), "max_pdf_pages": int64(c.Limits.MaxPDFPages), "max_pdf_chars": int64(c.Limits.MaxPDFChars)} {
		if n < 0 {
			v.errorf("limits."+name, "must be positive")
		}
	}
	for _, name := range sortedKeys(c.Assistants) {
		a, p := c.Assistants[name], "assistants."+name
		switch a.Mode {
		case "", "single", "loop", "interview", "router":
		default:
			v.errorf(p+".mode", "unknown mode %q (single, loop, interview or router)", a.Mode)
		}
		if (a.Mode == "router") != (a.Router != nil) {
			v.errorf(p+".router", "a router section goes with mode router, and mode router needs one")
		}
		if a.Router != nil {
			for i, sk := range a.Router.Skills {
				if _, ok := c.Assistants[sk.Assistant]; !ok {
					v.errorf(fmt.Sprintf("%s.router.skills[%d].assistant", p, i), "no assistant named %q%s", sk.Assistant, DidYouMean(sk.Assistant, sortedKeys(c.Assistants)))
				}
			}
			v.routerWords(p+".router", a.Router, c.Dir)
		}
		switch a.LiveContext {
		case "", "auto", "always", "off":
		default:
			v.errorf(p+".live_context", "unknown policy %q (auto, always or off)", a.LiveContext)
		}
		if a.HandOff && a.Mode != "loop" {
			v.errorf(p+".hand_off", "the hand-off tool goes with mode loop")
		}
		if a.Prompt != "" && a.PromptFile != "" {
			v.errorf(p, "set prompt or prompt_file, not both")
		} else if _, err := a.LoadPrompt(c.Dir); err != nil {
			v.errorf(p+".prompt_file", "%v", err)
		}
		l := a.Limits
		for _, f := range []struct {
			name string
			n    int64
		}{{"model_calls", int64(l.ModelCalls)}, {"tool_calls", int64(l.ToolCalls)}, {"deadline", int64(l.Deadline)},
			{"result_bytes", int64(l.ResultBytes)}, {"total_bytes", int64(l.TotalBytes)}, {"same_call", int64(l.SameCall)},
			{"max_questions", int64(a.MaxQuestions)}, {"max_tokens", int64(a.MaxTokens)}, {"max_reply_chars", int64(a.MaxReplyChars)}} {
			at := p + ".limits." + f.name
			if strings.HasPrefix(f.name, "max_") {
				at = p + "." + f.name
			}
			if f.n < 0 {
				v.errorf(at, "must not be negative")
			}
		}
	}
	tokens := map[string]string{}
	tenants := map[string]bool{}
	for i, t := range c.Tenants {
		p := fmt.Sprintf("tenants[%d]", i)
		if t.ID == "" {
			v.errorf(p, "id is required")
		} else if tenants[t.ID] {
			v.errorf(p+".id", "tenant %q is defined twice", t.ID)
		}
		tenants[t.ID] = true
		if t.Strategy != "" && c.Strategies[t.Strategy] == nil && !builtinStrategies[t.Strategy] {
			v.errorf(p+".strategy", "unknown strategy %q%s", t.Strategy, DidYouMean(t.Strategy, strategies))
		}
		if _, ok := c.Assistants[t.Assistant]; t.Assistant != "" && !ok {
			v.errorf(p+".assistant", "no assistant named %q in assistants%s", t.Assistant, DidYouMean(t.Assistant, sortedKeys(c.Assistants)))
		}
		if t.Timezone != "" {
			if _, err := time.LoadLocation(t.Timezone); err != nil {
				v.errorf(p+".timezone", "unknown time zone %q", t.Timezone)
			}
		}
		if t.Language != "" && !slices.Contains(chat.Languages, t.Language) {
			v.errorf(p+".language", "unknown language %q (one of: %s)", t.Language, strings.Join(chat.Languages, ", "))
		}
		users := map[string]bool{}
		for j, u := range t.Users {
			up := fmt.Sprintf("%s.users[%d]", p, j)
			if u.ID == "" {
				v.errorf(up, "id is required")
			} else if users[u.ID] {
				v.errorf(up+".id", "user %q is defined twice in tenant %s", u.ID, t.ID)
			}
			users[u.ID] = true
			if _, ok := t.Roles[u.Role]; !ok {
				v.errorf(up+".role", "role %q is not defined in tenant %s (defined: %s)%s", u.Role, t.ID, strings.Join(sortedKeys(t.Roles), ", "), DidYouMean(u.Role, sortedKeys(t.Roles)))
			}
			if u.Timezone != "" {
				if _, err := time.LoadLocation(u.Timezone); err != nil {
					v.errorf(up+".timezone", "unknown time zone %q", u.Timezone)
				}
			}
			for k, key := range u.Keys {
				kp := fmt.Sprintf("%s.keys[%d]", up, k)
				token := key.Token
				switch {
				case key.Token != "" && key.TokenEnv != "":
					v.errorf(kp, "set token or token_env, not both")
				case key.TokenEnv != "":
					token = v.getenv(key.TokenEnv)
					if token == "" {
						v.errorf(kp+".token_env", "environment variable %s is empty or unset", key.TokenEnv)
					}
				case key.Token == "":
					v.errorf(kp, "token or token_env is required")
				}
				if token != "" && len(token) < 8 {
					v.errorf(kp, "token is shorter than 8 characters")
				}
				if owner, dup := tokens[token]; dup && token != "" {
					v.errorf(kp, "the same token is already used by %s", owner)
				}
				if token != "" {
					tokens[token] = t.ID + "/" + u.ID
				}
				for s, scope := range key.Scopes {
					if !knownScopes[scope] {
						v.errorf(fmt.Sprintf("%s.scopes[%d]", kp, s), "unknown scope %q (read, write:safe, write:full, context:bind, turns:read_all)", scope)
					}
				}
			}
		}
	}
	if tb := c.Tools.Taskboard; tb != nil {
		for action, policy := range tb.Confirm {
			if policy != "always" && policy != "never" {
				v.errorf("tools.taskboard.confirm."+action, "unknown confirm policy %q (always or never)", policy)
			}
		}
		for tenant := range tb.Members {
			if !tenants[tenant] {
				v.errorf("tools.taskboard.members."+tenant, "no tenant %q is defined", tenant)
			}
		}
	}
	if tr := c.Tools.Trello; tr != nil {
		if tb := c.Tools.Taskboard; tb != nil && !tb.Disabled {
			v.errorf("tools.trello", "choose one task board: trello or taskboard (set taskboard.disabled: true)")
		}
		if tr.Board == "" || tr.KeyEnv == "" {
			v.errorf("tools.trello", "board and key_env are required")
		} else if v.getenv(tr.KeyEnv) == "" {
			v.errorf("tools.trello.key_env", "environment variable %s is empty or unset", tr.KeyEnv)
		}
		for action, policy := range tr.Confirm {
			if policy != "always" && policy != "never" {
				v.errorf("tools.trello.confirm."+action, "unknown confirm policy %q (always or never)", policy)
			}
		}
		v.checkTrelloRequires(c, tr)
	}
	if m := c.Channels.MCP; m != nil {
		switch p := m.Path; {
		case p == "":
		case !strings.HasPrefix(p, "/") || p == "/" || strings.HasPrefix(p, "/v1/") || p == "/healthz" || p == "/metrics" ||
			strings.ContainsAny(p, " {}"):
			v.errorf("channels.mcp.path", "must be a path of its own such as /mcp, not %q", p)
		}
		if m.ConfirmTimeout < 0 {
			v.errorf("channels.mcp.confirm_timeout", "must not be negative")
		}
	}
	if tg := c.Channels.Telegram; tg != nil {
		if tg.TokenEnv == "" || v.getenv(tg.TokenEnv) == "" {
			v.errorf("channels.telegram.token_env", "the bot token must come from a set environment variable")
		}
		if !tenants[tg.Tenant] {
			v.errorf("channels.telegram.tenant", "no tenant %q is defined", tg.Tenant)
		}
		switch tg.Mode {
		case "", "polling":
		case "webhook":
			if tg.PublicURL == "" {
				v.errorf("channels.telegram", "webhook mode needs public_url")
			}
			if tg.SecretTokenEnv == "" || v.getenv(tg.SecretTokenEnv) == "" {
				v.errorf("channels.telegram.secret_token_env", "webhook mode needs a secret token from a set environment variable")
			}
		default:
			v.errorf("channels.telegram.mode", "unknown mode %q (webhook or polling)", tg.Mode)
		}
	}
	if cal := c.Tools.Calendar; cal != nil && cal.Backend != "" && cal.Backend != "embedded" && cal.Backend != "google" {
		v.errorf("tools.calendar.backend", "unknown calendar backend %q (embedded or google)", cal.Backend)
	}
	if cal := c.Tools.Calendar; cal != nil && cal.Requires != "" && !integrations[cal.Requires] {
		v.errorf("tools.calendar.requires", "unknown integration %q (google or trello)", cal.Requires)
	}
	if m := c.Tools.MCP; m != nil {
		names := map[string]bool{}
		for i, srv := range m.Servers {
			p := fmt.Sprintf("tools.mcp.servers[%d]", i)
			if srv.Name == "" || names[srv.Name] {
				v.errorf(p+".name", "a unique name is required")
			}
			names[srv.Name] = true
			if (len(srv.Command) == 0) == (srv.URL == "") {
				v.errorf(p, "set exactly one of command (stdio) or url (streamable HTTP)")
			}
			if srv.DefaultRisk != "" && !knownScopes[srv.DefaultRisk] {
				v.errorf(p+".default_risk", "unknown risk %q", srv.DefaultRisk)
			}
			for pattern, tp := range srv.Tools {
				for j, role := range tp.Roles {
					v.role(fmt.Sprintf("%s.tools.%s.roles[%d]", p, pattern, j), role)
				}
				if tp.Risk != "" && !knownScopes[tp.Risk] {
					v.errorf(p+".tools."+pattern+".risk", "unknown risk %q", tp.Risk)
				}
				if tp.Confirm != "" && tp.Confirm != "always" && tp.Confirm != "never" {
					v.errorf(p+".tools."+pattern+".confirm", "unknown confirm policy %q", tp.Confirm)
				}
			}
			if srv.AskTimeout < 0 {
				v.errorf(p+".ask_timeout", "must not be negative")
			}
			ask := srv.AskTimeout
			if ask == 0 {
				ask = Duration(60 * time.Second) // mcptool.DefaultAskTimeout
			}
			if (srv.Sampling || srv.Elicitation) && srv.Timeout != 0 && srv.Timeout <= ask {
				v.errorf(p+".timeout", "with sampling or elicitation on, a call's timeout (%s) must be longer than the wait for the user's answer (ask_timeout %s)",
					time.Duration(srv.Timeout), time.Duration(ask))
			}
			if srv.BearerEnv != "" && v.getenv(srv.BearerEnv) == "" {
				v.errorf(p+".bearer_env", "environment variable %s is empty or unset", srv.BearerEnv)
			}
		}
	}
	seenTools := map[string]bool{}
	for i, h := range c.Tools.HTTP {
		p := fmt.Sprintf("tools.http[%d]", i)
		if h.Name == "" || h.URL == "" {
			v.errorf(p, "name and url are required")
		}
		if seenTools[h.Name] {
			v.errorf(p+".name", "tool %q is defined twice", h.Name)
		}
		seenTools[h.Name] = true
		if !knownScopes[h.Risk] {
			v.errorf(p+".risk", "unknown risk %q (read, write:safe or write:full)", h.Risk)
		}
		if h.Confirm != "" && h.Confirm != "always" && h.Confirm != "never" {
			v.errorf(p+".confirm", "unknown confirm policy %q (always or never)", h.Confirm)
		}
		if h.InputSchema == nil {
			v.errorf(p, "input_schema is required")
		}
		for j, role := range h.Approve {
			v.role(fmt.Sprintf("%s.approve[%d]", p, j), role)
		}
		for header, env := range h.HeadersEnv {
			if v.getenv(env) == "" {
				v.errorf(p+".headers_env."+header, "environment variable %s is empty or unset", env)
			}
		}
	}
	for field, set := range map[string]map[string]string{"tools.knowledge.confirm": toolSetConfirm(c.Tools.Knowledge), "tools.content_ideas.confirm": contentConfirm(c.Tools.ContentIdeas)} {
		for action, policy := range set {
			if policy != "always" && policy != "never" {
				v.errorf(field+"."+action, "unknown confirm policy %q (always or never)", policy)
			}
		}
	}
	switch c.Observability.TracesExporter {
	case "", "otlp", "stdout", "none":
	default:
		v.errorf("observability.traces_exporter", "unknown exporter %q (otlp, stdout or none)", c.Observability.TracesExporter)
	}
	for name, cmd := range c.Commands {
		if !strings.HasPrefix(name, "/") {
			v.errorf("commands."+name, "a command starts with /")
		}
		if cmd.Tool == "" {
			v.errorf("commands."+name, "tool is required")
		}
	}
	if c.Log.Format != "" && c.Log.Format != "text" && c.Log.Format != "json" {
		v.errorf("log.format", "unknown log format %q (text or json)", c.Log.Format)
	}
}

// role checks that a role named at path (an approval's approvers) is a
// role of some tenant.
func (v *validator) role(path, name string) {
	var roles []string
	for _, t := range v.cfg.Tenants {
		if _, ok := t.Roles[name]; ok {
			return
		}
		roles = append(roles, sortedKeys(t.Roles)...)
	}
	v.errorf(path, "no tenant defines a role %q%s", name, DidYouMean(name, roles))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func toolSetConfirm(t *ToolSet) map[string]string {
	if t == nil {
		return nil
	}
	return t.Confirm
}

func contentConfirm(t *ContentIdeas) map[string]string {
	if t == nil {
		return nil
	}
	return t.Confirm
}

// integrations are what a user can connect (users[].google, users[].trello),
// the values a built-in kind's requires may name.
var integrations = map[string]bool{"google": true, "trello": true}

// checkTrelloRequires: a board shown only to users who connected Trello
// acts with each one's own token, so no default token may stand in for
// theirs, and every connected user needs one.
func (v *validator) checkTrelloRequires(c *Config, tr *Trello) {
	switch {
	case tr.Requires == "":
		return
	case !integrations[tr.Requires]:
		v.errorf("tools.trello.requires", "unknown integration %q (google or trello)", tr.Requires)
		return
	case tr.TokenEnv != "":
		v.errorf("tools.trello.token_env", "a board that requires %s acts with each user's own token: remove the default token", tr.Requires)
	}
	if tr.Requires != "trello" {
		return
	}
	for _, t := range c.Tenants {
		for _, u := range t.Users {
			if u.Trello != nil && u.Trello.TokenEnv == "" {
				v.errorf("tenants."+t.ID+".users."+u.ID+".trello.token_env", "the board requires trello: a connected user needs their own token")
			}
		}
	}
}
