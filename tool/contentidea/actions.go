package contentidea

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
	"github.com/arbiterhq/arbiter/tool/internal/textclean"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Argument limits, in characters; the schemas state the same.
const (
	maxIdea     = 2000
	maxPlatform = 64
	maxFormat   = 100
	maxNotes    = 4000
)

// List limits.
const (
	defaultLimit = 10
	maxLimit     = 50
)

// ideaAction is one content-idea operation as a tool.Tool that also
// resolves what a call would do. It is safe for concurrent use.
type ideaAction struct {
	*action.Tool
	store *Store
}

var (
	_ tool.Tool     = (*ideaAction)(nil)
	_ tool.Resolver = (*ideaAction)(nil)
)

// Resolve tells the engine what a call would do. A content idea without a
// known platform saves nothing — it only offers the platforms — so it is a
// read that needs no confirmation; the user confirms once, when the idea
// comes back with its platform. Everything else keeps its own spec (and
// the confirmation policy configured for it).
func (a *ideaAction) Resolve(ctx context.Context, c tool.Caller, args json.RawMessage) (tool.Spec, error) {
	spec := a.Spec()
	spec.Confirm = "" // the registered tool's policy applies
	if spec.Name != ActionIdea {
		return spec, nil
	}
	var in struct {
		Platform *string `json:"platform"`
	}
	_ = json.Unmarshal(args, &in)
	if in.Platform == nil {
		spec.Risk, spec.Confirm = tool.RiskRead, tool.ConfirmNever
		return spec, nil
	}
	if _, ok := a.store.Platform(*in.Platform); !ok {
		spec.Risk, spec.Confirm = tool.RiskRead, tool.ConfirmNever
	}
	return spec, nil
}

// newAction is the content-idea operation name as a tool.Tool that runs
// calls for the caller's tenant with run. Every outcome of a call that ran,
// a missing platform included, is a Result.
func (s *Store) newAction(name string, run func(context.Context, tool.Call) tool.Result) *ideaAction {
	return &ideaAction{Tool: action.New("contentidea", s.spec(name), run), store: s}
}

// spec describes action name.
func (s *Store) spec(name string) tool.Spec {
	list := strings.Join(s.platforms, ", ")
	spec := tool.Spec{Name: name, Policy: tool.Policy{Confirm: s.confirm[name]}}
	switch name {
	case ActionIdea:
		spec.Title = "Сохранить контент-идею"
		spec.Titles = tool.Localized{"ru": "Сохранить контент-идею", "en": "Save a content idea"}
		spec.Doing = tool.Localized{"ru": "Сохранение контент-идеи", "en": "Saving the content idea"}
		spec.Labels = map[string]tool.Localized{"idea": {"ru": "Идея", "en": "Idea"}, "platform": {"ru": "Площадка", "en": "Platform"},
			"format": {"ru": "Формат", "en": "Format"}, "notes": {"ru": "Заметки", "en": "Notes"}}
		spec.Description = "Save a content idea to the team's content plan: what to publish (idea), the platform " +
			"(one of " + list + "), an optional format (post, reels, stories, video, article, ...) and notes. " +
			"Leave platform null when the user has not named one: the server then offers the platforms as buttons " +
			"and nothing is saved until the user picks one (the button completes the idea as proposed)."
		spec.Risk = tool.RiskWriteSafe
		spec.Idempotent = true
		spec.InputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "idea": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to publish"},
    "platform": {"type": ["string", "null"], "maxLength": 64, "description": "One of ` + jsonText(list) + `; null when not chosen"},
    "format": {"type": ["string", "null"], "maxLength": 100, "description": "Format: post, reels, stories, video, article, ..."},
    "notes": {"type": ["string", "null"], "maxLength": 4000, "description": "Anything else to remember about the idea"}
  },
  "required": ["idea"],
  "additionalProperties": false
}`)
	case ActionList:
		spec.Title = "Контент-идеи"
		spec.Titles = tool.Localized{"ru": "Контент-идеи", "en": "Content ideas"}
		spec.Description = "List the team's saved content ideas, newest first, optionally for one platform (" + list + ")."
		spec.Risk = tool.RiskRead
		spec.MaxResultBytes = 32 << 10
		spec.InputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "platform": {"type": ["string", "null"], "maxLength": 64, "description": "Only ideas for this platform: one of ` + jsonText(list) + `"},
    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50, "description": "Most ideas to return; default 10"}
  },
  "additionalProperties": false
}`)
	}
	return spec
}

// jsonText is s escaped for use inside a JSON string literal.
func jsonText(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw[1 : len(raw)-1])
}

type ideaArgs struct {
	Idea     string  `json:"idea"`
	Platform *string `json:"platform"`
	Format   *string `json:"format"`
	Notes    *string `json:"notes"`
}

type listArgs struct {
	Platform *string `json:"platform"`
	Limit    *int    `json:"limit"`
}

// applied holds the results of applied idempotency keys.
var applied = sqlitex.Applied{Table: "contentidea_applied", IDColumn: "idea_id", IDType: "INTEGER"}

// ideaView is an idea as Result.Data shows it.
type ideaView struct {
	ID        int64  `json:"id"`
	Idea      string `json:"idea"`
	Platform  string `json:"platform"`
	Format    string `json:"format,omitempty"`
	Notes     string `json:"notes,omitempty"`
	Author    string `json:"author"`
	CreatedAt string `json:"created_at"`
}

func view(i *Idea) ideaView {
	return ideaView{ID: i.ID, Idea: i.Idea, Platform: i.Platform, Format: i.Format, Notes: i.Notes,
		Author: i.AuthorName, CreatedAt: i.CreatedAt.Format(time.RFC3339)}
}

// draft is an idea waiting for its platform, as an ambiguous Result's Data
// shows it.
type draft struct {
	Idea   string `json:"idea"`
	Format string `json:"format,omitempty"`
	Notes  string `json:"notes,omitempty"`
}

// saveIdea saves an idea for a configured platform. Without one it saves
// nothing and asks which platform. A repeated idempotency key returns the
// first call's result and saves nothing.
func (s *Store) saveIdea(ctx context.Context, call tool.Call) tool.Result {
	c := call.Caller
	var a ideaArgs
	if r := s.reply.DecodeArgs(call, &a); r != nil {
		return *r
	}
	idea, format, notes := textclean.Text(a.Idea), textclean.Line(reply.Opt(a.Format)), textclean.Text(reply.Opt(a.Notes))
	given := textclean.Line(reply.Opt(a.Platform))
	if idea == "" {
		return s.reply.Failure("idea", "idea is empty", reply.Tr(c, "Идея пустая.", "The idea is empty."))
	}
	if r := s.reply.CheckFields(c, reply.MaxLen("idea", idea, maxIdea), reply.MaxLen("platform", given, maxPlatform),
		reply.MaxLen("format", format, maxFormat), reply.MaxLen("notes", notes, maxNotes)); r != nil {
		return *r
	}
	// A key already applied answers with its result, whatever the
	// arguments now say.
	if call.IdempotencyKey != "" {
		res, done, err := applied.Replay(ctx, s.db, s.reply, call, ActionIdea)
		if err != nil {
			return s.storageFailure(c, err)
		}
		if done {
			return res
		}
	}
	platform, ok := s.Platform(given)
	if !ok {
		return s.askPlatform(c, given, draft{Idea: idea, Format: format, Notes: notes})
	}
	author := strings.TrimSpace(c.Name)
	if author == "" {
		author = c.UserID
	}
	res, err := applied.Once(ctx, s.writer, s.reply, call, ActionIdea, s.now, func(tx *sql.Tx) (any, tool.Result, error) {
		now := s.now()
		id, err := sqlitex.Insert(ctx, tx, `INSERT INTO contentidea_ideas (tenant, idea, platform, format, notes,
			author_id, author_name, created_at, idem_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.TenantID, idea, platform, format, notes, c.UserID, author, sqlitex.Stamp(now), call.IdempotencyKey)
		if err != nil {
			return nil, tool.Result{}, fmt.Errorf("insert idea: %w", err)
		}
		saved := Idea{ID: id, Tenant: c.TenantID, Idea: idea, Platform: platform, Format: format, Notes: notes,
			AuthorID: c.UserID, AuthorName: author, CreatedAt: sqlitex.ParseStamp(sqlitex.Stamp(now))}
		return id, s.savedResult(c, &saved), nil
	})
	if err != nil {
		return s.storageFailure(c, err)
	}
	return res
}

// askPlatform is the ambiguous Result for a missing or unknown platform.
func (s *Store) askPlatform(c tool.Caller, given string, d draft) tool.Result {
	list := strings.Join(s.platforms, ", ")
	text := reply.Tr(c, fmt.Sprintf("Для какой площадки идея «%s»? Выберите: %s.", clip(d.Idea, 80), list),
		fmt.Sprintf("Which platform is the idea %q for? Choose: %s.", clip(d.Idea, 80), list))
	errText := "platform is missing; the user was offered the candidates as buttons, and picking one saves this idea"
	if given != "" {
		text = reply.Tr(c, fmt.Sprintf("Площадки «%s» нет в списке. Выберите: %s.", given, list),
			fmt.Sprintf("%q is not one of the platforms. Choose: %s.", given, list))
		errText = fmt.Sprintf("platform %q is not configured; the user was offered the candidates as buttons, and picking one saves this idea", given)
	}
	raw, _ := json.Marshal(struct {
		Draft draft `json:"draft"`
	}{d})
	platforms := s.Platforms()
	choices := make([]tool.Choice, len(platforms))
	for i, p := range platforms {
		args, _ := json.Marshal(struct {
			draft
			Platform string `json:"platform"`
		}{d, p})
		choices[i] = tool.Choice{Label: p, Tool: ActionIdea, Args: args}
	}
	return tool.Result{Status: tool.StatusAmbiguous, Data: raw, Text: text, Error: errText, Field: "platform",
		Candidates: platforms, Choices: choices, Source: SourceName, ObservedAt: s.now()}
}

func (s *Store) savedResult(c tool.Caller, i *Idea) tool.Result {
	where := i.Platform
	if i.Format != "" {
		where += ", " + i.Format
	}
	text := reply.Tr(c, fmt.Sprintf("Идея сохранена (%s): «%s»", where, clip(i.Idea, 120)),
		fmt.Sprintf("Saved the idea (%s): %q", where, clip(i.Idea, 120)))
	return s.reply.OK(struct {
		Idea ideaView `json:"idea"`
	}{view(i)}, text)
}

// listIdeas lists the tenant's ideas, newest first, for one platform when
// given; an unknown platform is ambiguous.
func (s *Store) listIdeas(ctx context.Context, call tool.Call) tool.Result {
	c := call.Caller
	var a listArgs
	if r := s.reply.DecodeArgs(call, &a); r != nil {
		return *r
	}
	limit, r := s.reply.CheckLimit(c, a.Limit, defaultLimit, maxLimit)
	if r != nil {
		return *r
	}
	given := textclean.Line(reply.Opt(a.Platform))
	var ideas []Idea
	var err error
	platform := ""
	if given != "" {
		p, ok := s.Platform(given)
		if !ok {
			list := strings.Join(s.platforms, ", ")
			return tool.Result{Status: tool.StatusAmbiguous, Field: "platform", Candidates: s.Platforms(),
				Error: fmt.Sprintf("platform %q is not configured", given),
				Text: reply.Tr(c, fmt.Sprintf("Площадки «%s» нет в списке. Выберите: %s.", given, list),
					fmt.Sprintf("%q is not one of the platforms. Choose: %s.", given, list)),
				Source: SourceName, ObservedAt: s.now()}
		}
		platform = p
		ideas, err = s.query(ctx, s.db, `WHERE tenant = ? AND platform = ? ORDER BY id DESC LIMIT ?`, c.TenantID, p, limit)
	} else {
		ideas, err = s.query(ctx, s.db, `WHERE tenant = ? ORDER BY id DESC LIMIT ?`, c.TenantID, limit)
	}
	if err != nil {
		return s.storageFailure(c, err)
	}
	views := make([]ideaView, len(ideas))
	lines := make([]string, len(ideas))
	for n := range ideas {
		i := &ideas[n]
		views[n] = view(i)
		where := i.Platform
		if i.Format != "" {
			where += ", " + i.Format
		}
		lines[n] = fmt.Sprintf("%d. [%s] %s — %s", n+1, where, clip(i.Idea, 120), i.AuthorName)
	}
	var text string
	switch {
	case len(ideas) == 0 && platform != "":
		text = reply.Tr(c, "Идей для "+platform+" пока нет.", "No ideas for "+platform+" yet.")
	case len(ideas) == 0:
		text = reply.Tr(c, "Контент-идей пока нет.", "No content ideas yet.")
	default:
		text = reply.Tr(c, fmt.Sprintf("Контент-идеи (%d):", len(ideas)), fmt.Sprintf("Content ideas (%d):", len(ideas))) +
			"\n" + strings.Join(lines, "\n")
	}
	return s.reply.OK(struct {
		Platform string     `json:"platform,omitempty"`
		Ideas    []ideaView `json:"ideas"`
	}{platform, views}, text)
}

// storageFailure turns a database or context error into a Result: a
// timeout is an error, never "not found".
func (s *Store) storageFailure(c tool.Caller, err error) tool.Result {
	return sqlitex.Failure(s.reply, err, "content ideas",
		reply.Tr(c, "Хранилище идей не ответило вовремя, действие не выполнено.", "The content ideas store did not answer in time; nothing was done."),
		reply.Tr(c, "Ошибка хранилища идей, действие не выполнено.", "The content ideas storage failed; nothing was done."))
}

// clip shortens s to at most n runes, marking a cut with "…".
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
