package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/channel/httpapi"
	"github.com/arbiterhq/arbiter/channel/telegram"
	"github.com/arbiterhq/arbiter/channel/webchat"
	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/config"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/openaicompat"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/store/sqlitestore"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/calendar"
	"github.com/arbiterhq/arbiter/tool/contentidea"
	"github.com/arbiterhq/arbiter/tool/httptool"
	"github.com/arbiterhq/arbiter/tool/knowledge"
	"github.com/arbiterhq/arbiter/tool/taskboard"
	"github.com/arbiterhq/arbiter/tool/trello"
	"github.com/arbiterhq/arbiter/turn"
	"github.com/arbiterhq/arbiter/turn/mode/builtin"
)

// Builtin returns the kinds of this module, in fresh maps the caller may
// extend: the SQLite state and journal, the OpenAI-compatible model kinds,
// the task board, Trello, the embedded calendar, the knowledge base,
// content ideas, HTTP tools, and the Telegram channel.
func Builtin() Kinds {
	k := Kinds{
		States: map[string]StateKind{"sqlite": func(_ context.Context, env *Env) (store.State, store.Locker, error) {
			return env.SQLite, env.SQLite, nil
		}},
		Journals: map[string]JournalKind{"sqlite": func(_ context.Context, env *Env) (store.Journal, error) { return env.SQLite, nil }},
		Models:   map[string]ModelKind{},
		Tools: map[string]ToolKind{
			"taskboard":     taskboardKind,
			"trello":        trelloKind,
			"calendar":      CalendarKind(nil),
			"knowledge":     knowledgeKind,
			"content_ideas": contentIdeasKind,
			"http":          httpToolsKind,
		},
		ToolNames: builtinToolNames(),
		Channels:  map[string]ChannelKind{"telegram": telegramKind},
		Modes:     builtin.Modes(),
		// An assistant that names no mode takes one decision a turn.
		DefaultMode:  builtin.DefaultMode,
		ModeSettings: builtinModeSettings(),
	}
	for name, p := range openaicompat.Presets {
		k.Models[name] = ModelKind{Preset: p, Prices: openaicompat.Prices, New: newOpenAICompat}
	}
	return k
}

func newOpenAICompat(m Model) (llm.Provider, error) {
	return openaicompat.New(openaicompat.Config{
		Name: m.Name, BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model,
		Output: m.Output, Protocol: m.Protocol, Timeout: m.Timeout, Stream: m.Stream, NoStream: m.NoStream, Images: m.Images, HTTPClient: m.HTTPClient,
		AuthHeader: m.AuthHeader, Headers: m.Headers,
	})
}

// openSQLite opens the embedded file with the configuration's lock
// settings, once this process holds it (storelock.go) unless the
// configuration makes it a reader. How long a conversation's parts are
// kept is the engine's to say on every commit (turn.Lifetimes), not a
// store-wide TTL: the memory's ttl would take the case, the skill and the
// interview with it.
func openSQLite(path string, env *Env) (*sqlitestore.Store, error) {
	cfg := env.Config
	if !cfg.Store.Reader && !env.noStoreClaim {
		l, err := lockStore(path)
		if err != nil {
			return nil, err
		}
		env.OnClose(l.release)
	}
	st, err := sqlitestore.Open(path, sqlitestore.Options{
		Now:      env.Now,
		LockWait: time.Duration(cfg.Store.LockWait), LockTTL: time.Duration(cfg.Store.LockTTL),
	})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return st, nil
}

// ConfirmPolicies turns a section's confirm overrides into policies.
func ConfirmPolicies(m map[string]string) map[string]tool.Confirm {
	out := make(map[string]tool.Confirm, len(m))
	for action, policy := range m {
		out[action] = tool.Confirm(policy)
	}
	return out
}

// toolSections are the configured tool sections in building order: the
// kinds config describes, then the others by name.
func toolSections(cfg *config.Config) []string {
	t := cfg.Tools
	var out []string
	if t.Taskboard != nil && !t.Taskboard.Disabled {
		out = append(out, "taskboard")
	}
	for _, s := range []struct {
		name string
		set  bool
	}{{"trello", t.Trello != nil}, {"calendar", t.Calendar != nil}, {"mcp", t.MCP != nil && len(t.MCP.Servers) > 0},
		{"knowledge", t.Knowledge != nil}, {"content_ideas", t.ContentIdeas != nil}, {"http", len(t.HTTP) > 0}} {
		if s.set {
			out = append(out, s.name)
		}
	}
	return append(out, sortedKeys(t.Extra)...)
}

// channelSections are the configured channel sections, in building order.
func channelSections(cfg *config.Config) []string {
	var out []string
	if cfg.Channels.Telegram != nil {
		out = append(out, "telegram")
	}
	if cfg.Channels.MCP != nil {
		out = append(out, "mcp")
	}
	return append(out, sortedKeys(cfg.Channels.Extra)...)
}

func taskboardKind(_ context.Context, env *Env, _ Section) (ToolSet, error) {
	cfg, tb := env.Config, env.Config.Tools.Taskboard
	members := map[string][]taskboard.Member{}
	for _, t := range cfg.Tenants {
		for _, u := range t.Users {
			members[t.ID] = append(members[t.ID], taskboard.Member{ID: u.ID, Name: u.Name})
		}
	}
	extra := map[string][]taskboard.Member{}
	for tenant, ms := range tb.Members {
		for _, m := range ms {
			extra[tenant] = append(extra[tenant], taskboard.Member{ID: m.ID, Name: m.Name})
		}
	}
	board, err := taskboard.New(taskboard.Config{
		DB:           env.SQLite.DB(),
		Columns:      tb.Columns,
		Members:      func(tenant string) []taskboard.Member { return members[tenant] },
		ExtraMembers: extra,
		Confirm:      ConfirmPolicies(tb.Confirm),
		BaseURL:      env.PublicURL,
		NoLinks:      env.PublicURL == "",
		Now:          env.Now,
		NewID:        env.NewID,
	})
	if err != nil {
		return ToolSet{}, err
	}
	return ToolSet{Tools: board.Tools(), Context: []tool.ContextSource{board}, LinkRoutes: cardLinkRoute(board),
		Commands: tasksCommand, Reads: boardReads(board), Pages: []webchat.Page{webchat.PageBoard}}, nil
}

// tasksCommand is the boards' /tasks: the caller's cards, with no model.
var tasksCommand = map[string]turn.Command{"/tasks": {Tool: "list_my_tasks", Help: tool.Localized{"en": "my tasks", "ru": "мои задачи"}}}

// cardQuestions are how users ask what a board's card is about, in the
// languages of the boards' texts.
var cardQuestions = []string{
	"о чем эта задача", "о чем задача", "что за задача", "что это за задача", "что в карточке",
	"что там в карточке", "о чем карточка", "что за карточка", "что в задаче", "что там в задаче",
	"what is this task", "what's this task", "what is this card", "what's in this card", "what's this card",
	"what is the task about", "what is this about",
}

// cardLinkRoute is the boards' card-link route: a question about a card
// with its link is answered from the board, with no model.
func cardLinkRoute(r tool.LinkReader) []turn.LinkRoute {
	return []turn.LinkRoute{{Asks: cardQuestions, Reader: r}}
}

// boardReads are the board's pages in the HTTP API: the board, and a card
// with its history (where the board's card links point).
func boardReads(b *taskboard.Board) []httpapi.Read {
	return []httpapi.Read{
		{Pattern: "GET /v1/board", What: "board", Read: func(r *http.Request, who chat.Identity) (any, error) {
			return b.View(r.Context(), who.TenantID)
		}},
		{Pattern: "GET /v1/board/cards/{id}", What: "card", Read: func(r *http.Request, who chat.Identity) (any, error) {
			v, err := b.CardPage(r.Context(), who.TenantID, r.PathValue("id"))
			if errors.Is(err, taskboard.ErrNotFound) {
				err = httpapi.ErrNotFound
			}
			return v, err
		}},
	}
}

// trelloMemberID is the shape of a Trello member id (not a username).
var trelloMemberID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// trelloKind builds the Trello board: the default connection from the
// environment and each user's own connection where configured.
func trelloKind(_ context.Context, env *Env, _ Section) (ToolSet, error) {
	cfg, tr := env.Config, env.Config.Tools.Trello
	type userKey struct{ tenant, user string }
	tokens := map[userKey]string{}
	members := map[string][]trello.Member{}
	for _, t := range cfg.Tenants {
		for _, u := range t.Users {
			if u.Trello == nil {
				continue
			}
			if tok := env.Getenv(u.Trello.TokenEnv); u.Trello.TokenEnv != "" && tok != "" {
				tokens[userKey{t.ID, u.ID}] = tok
			}
			if m := u.Trello.Member; m != "" {
				member := trello.Member{UserID: u.ID, Name: u.Name, Username: m}
				if trelloMemberID.MatchString(m) {
					member = trello.Member{UserID: u.ID, Name: u.Name, TrelloID: m}
				}
				members[t.ID] = append(members[t.ID], member)
			}
		}
	}
	c, err := trello.New(trello.Config{
		APIBaseURL: tr.APIBaseURL,
		Key:        env.Getenv(tr.KeyEnv),
		Token:      env.Getenv(tr.TokenEnv), // none where the board requires a connection (config checks)
		Requires:   tr.Requires,
		UserTokens: func(tenant, user string) (string, bool) {
			tok, ok := tokens[userKey{tenant, user}]
			return tok, ok
		},
		Board:    tr.Board,
		DoneList: tr.DoneList,
		Confirm:  ConfirmPolicies(tr.Confirm),
		Members:  func(tenant string) []trello.Member { return members[tenant] },
		Now:      env.Now,
	})
	if err != nil {
		return ToolSet{}, err
	}
	return ToolSet{Tools: c.Tools(), Context: []tool.ContextSource{c}, LinkRoutes: cardLinkRoute(c), LinkHosts: []string{"trello.com"},
		Commands: tasksCommand}, nil
}

// CalendarBackends make the backends of tools.calendar.backend other than
// the embedded one, by name ("google").
type CalendarBackends map[string]func(env *Env, members map[string][]calendar.Member) (calendar.Backend, error)

// CalendarKind is the calendar tool kind with backends besides the
// embedded one (cmd/arbiter adds Google Calendar's).
func CalendarKind(backends CalendarBackends) ToolKind {
	return func(_ context.Context, env *Env, _ Section) (ToolSet, error) {
		cfg, cal := env.Config, env.Config.Tools.Calendar
		members := map[string][]calendar.Member{}
		zones := map[string]string{}
		for _, t := range cfg.Tenants {
			zones[t.ID] = t.Timezone
			for _, u := range t.Users {
				m := calendar.Member{ID: u.ID, Name: u.Name, Timezone: u.Timezone}
				if u.Google != nil {
					m.Email = u.Google.Email
				}
				members[t.ID] = append(members[t.ID], m)
			}
		}
		c := calendar.Config{
			DB:             env.SQLite.DB(),
			Members:        func(tenant string) []calendar.Member { return members[tenant] },
			TenantTimezone: func(tenant string) string { return zones[tenant] },
			Now:            env.Now,
			Requires:       cal.Requires,
		}
		if name := orDefault(cal.Backend, "embedded"); name != "embedded" {
			newBackend, ok := backends[name]
			if !ok {
				return ToolSet{}, fmt.Errorf("the %s calendar backend is not part of this program", name)
			}
			b, err := newBackend(env, members)
			if err != nil {
				return ToolSet{}, fmt.Errorf("%s calendar: %w", name, err)
			}
			c.Backend = b
		}
		out, err := calendar.New(c)
		if err != nil {
			return ToolSet{}, err
		}
		set := ToolSet{Tools: out.Tools(), Context: []tool.ContextSource{out}}
		if lh, ok := c.Backend.(interface{ LinkHosts() []string }); ok {
			set.LinkHosts = lh.LinkHosts()
		}
		return set, nil
	}
}

func knowledgeKind(_ context.Context, env *Env, _ Section) (ToolSet, error) {
	kb, err := knowledge.New(knowledge.Config{DB: env.SQLite.DB(), Now: env.Now, Confirm: ConfirmPolicies(env.Config.Tools.Knowledge.Confirm)})
	if err != nil {
		return ToolSet{}, err
	}
	return ToolSet{Tools: kb.Tools()}, nil
}

func contentIdeasKind(_ context.Context, env *Env, _ Section) (ToolSet, error) {
	ci := env.Config.Tools.ContentIdeas
	ideas, err := contentidea.New(contentidea.Config{DB: env.SQLite.DB(), Platforms: ci.Platforms, Now: env.Now, Confirm: ConfirmPolicies(ci.Confirm)})
	if err != nil {
		return ToolSet{}, err
	}
	return ToolSet{Tools: ideas.Tools()}, nil
}

// httpToolsKind builds the configured HTTP endpoints as tools.
func httpToolsKind(_ context.Context, env *Env, _ Section) (ToolSet, error) {
	var set ToolSet
	for _, h := range env.Config.Tools.HTTP {
		schema, err := json.Marshal(h.InputSchema)
		if err != nil {
			return ToolSet{}, fmt.Errorf("tool %s: input_schema: %w", h.Name, err)
		}
		headers := maps.Clone(h.Headers)
		if headers == nil {
			headers = map[string]string{}
		}
		for k, name := range h.HeadersEnv {
			headers[k] = env.Getenv(name)
		}
		confirm := tool.Confirm(h.Confirm)
		if confirm == "" {
			// A write to an operator's endpoint is confirmed unless the
			// configuration says otherwise.
			confirm = tool.ConfirmNever
			if tool.Risk(h.Risk).Writes() {
				confirm = tool.ConfirmAlways
			}
		}
		t, err := httptool.New(httptool.Config{
			Name: h.Name, Title: h.Title, Description: h.Description,
			URL: h.URL, Method: h.Method, InputSchema: schema,
			Risk: tool.Risk(h.Risk), Confirm: confirm, Idempotent: h.Idempotent, Claims: h.Claims, BoundArgs: h.Bound, Sensitive: h.Sensitive,
			Outcomes: outcomes(h.Outcomes, h.OutcomePatterns, h.OutcomeWhen), Receipt: tool.Localized(h.Receipt),
			ExternalResults: h.ExternalResults,
			Approve:         h.Approve, Basis: h.Basis, PrecheckURL: h.PrecheckURL, ReconcileURL: h.ReconcileURL, Requires: h.Requires,
			Timeout: time.Duration(h.Timeout), FreshFor: time.Duration(h.FreshFor), Redact: h.Redact, Headers: headers,
		})
		if err != nil {
			return ToolSet{}, fmt.Errorf("tool %s: %w", h.Name, err)
		}
		set.Tools = append(set.Tools, t)
	}
	return set, nil
}

// telegramKind builds the Telegram channel on the engine and the state's
// durable channel inbox.
func telegramKind(_ context.Context, env *Env, _ Section) (Channel, error) {
	cfg, tg := env.Config, env.Config.Channels.Telegram
	inbox, ok := env.State.(store.ChannelInbox)
	if !ok {
		return Channel{}, errors.New("the configured store has no durable channel inbox")
	}
	users := map[int64]chat.Identity{}
	lang := chat.DefaultLanguage
	for _, t := range cfg.Tenants {
		if t.ID != tg.Tenant {
			continue
		}
		lang = chat.Language(t.Language)
		for _, u := range t.Users {
			scopes := u.ChannelScopes
			if len(scopes) == 0 {
				scopes = []string{"read", "write:safe", "write:full"}
			}
			for _, id := range u.TelegramIDs {
				users[id] = Identity(t, u, scopes)
			}
		}
	}
	c := telegram.Config{
		Token:       env.Getenv(tg.TokenEnv),
		APIBaseURL:  tg.APIBaseURL,
		Mode:        tg.Mode,
		SecretToken: env.Getenv(tg.SecretTokenEnv),
		PublicURL:   tg.PublicURL,
		WebhookPath: tg.WebhookPath,
		Handler:     env.Engine,
		Inbox:       inbox,
		Identify: func(id int64) (chat.Identity, bool) {
			who, ok := users[id]
			return who, ok
		},
		Logger:   env.Logger,
		Language: lang, // to people it does not know: the tenant's, by the one rule
	}
	if tr := tg.Transcription; tr != nil {
		c.Transcribe = openaicompat.Transcriber(tr.BaseURL, tr.Model, env.Getenv(tr.APIKeyEnv))
	}
	ch, err := telegram.New(c)
	if err != nil {
		return Channel{}, err
	}
	return Channel{Routes: map[string]http.Handler{"POST " + orDefault(tg.WebhookPath, telegram.DefaultWebhookPath): ch}, Run: ch.Run}, nil
}

// outcomes are a tool's outcomes as configured: the names it lists, and
// the names given patterns only.
func outcomes(names []string, patterns map[string][]string, when map[string]map[string]string) []tool.Outcome {
	var out []tool.Outcome
	for _, n := range names {
		out = append(out, tool.Outcome{Name: n, Patterns: patterns[n], When: when[n]})
	}
	for _, n := range slices.Sorted(maps.Keys(patterns)) {
		if !slices.Contains(names, n) {
			out = append(out, tool.Outcome{Name: n, Patterns: patterns[n], When: when[n]})
		}
	}
	return out
}
