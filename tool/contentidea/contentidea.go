// Package contentidea keeps a team's content ideas — what to publish, on
// which platform, in what format — per tenant in SQLite tables prefixed
// "contentidea_".
//
// It provides two tools. content_idea (write:safe, confirmed by the user
// by default) saves a draft idea for one of the configured platforms; when
// the platform is missing or is not one of them, it saves nothing and
// returns an ambiguous result with Field "platform" and the platforms as
// Candidates, which the engine shows as buttons so the user picks one and
// the model proposes the idea again with it. The ambiguous result's Data
// carries the draft (idea, format, notes) so nothing needs retyping.
// list_content_ideas (read) lists the tenant's saved ideas, newest first,
// optionally for one platform.
//
// Platforms are matched without regard to case, spaces, punctuation or
// "ё"; the default platforms also answer to common Russian and short names
// ("телеграм", "тг", "инста", "ютуб", "блог", ...). A name is never
// guessed from a partial match.
//
// The package does not open databases or decide at run time whether a call
// needs confirmation: the engine does that from each tool's Spec.
package contentidea

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Action names.
const (
	ActionIdea = "content_idea"
	ActionList = "list_content_ideas"
)

// SourceName is the Source of every Result the tools return.
const SourceName = "contentidea"

// DefaultPlatforms are the platforms of a zero Config.
var DefaultPlatforms = []string{"telegram", "instagram", "youtube", "blog"}

// maxPlatformBytes bounds a configured platform name: the engine shows
// candidates as buttons whose values are at most 64 bytes.
const maxPlatformBytes = 64

// defaultAliases are other names of the default platforms, by platform.
var defaultAliases = map[string][]string{
	"telegram":  {"телеграм", "телеграмм", "телега", "tg", "тг"},
	"instagram": {"инстаграм", "инстаграмм", "инста", "insta", "ig"},
	"youtube":   {"ютуб", "ютюб", "ютьюб", "yt"},
	"blog":      {"блог"},
}

// Config configures a Store. Zero values select the documented defaults.
type Config struct {
	// DB is a SQLite handle, possibly shared with other components. The
	// store owns the tables prefixed "contentidea_" and creates them in
	// New. Required.
	DB *sql.DB
	// Platforms an idea can be planned for, in the order they are offered.
	// Default DefaultPlatforms.
	Platforms []string
	// Now is the clock that dates ideas; default time.Now.
	Now func() time.Time
	// Confirm overrides the confirmation policy per action name. Defaults:
	// content_idea "always", list_content_ideas "never".
	Confirm map[string]tool.Confirm
}

// Idea is a saved content idea as Ideas returns it.
type Idea struct {
	ID         int64
	Tenant     string
	Idea       string
	Platform   string // one of the configured platforms, as configured
	Format     string // empty when not given
	Notes      string // empty when not given
	AuthorID   string
	AuthorName string
	CreatedAt  time.Time
}

// Store holds the content ideas of every tenant in one database. It is
// safe for concurrent use; its writes are serialized and a busy database
// is retried until the call's context ends.
type Store struct {
	db        *sql.DB
	platforms []string
	byKey     map[string]string // platformKey of a name or alias → platform
	now       func() time.Time
	confirm   map[string]tool.Confirm
	writer    *sqlitex.Writer
	reply     reply.Builder
}

var schemaDDL = []string{
	`CREATE TABLE IF NOT EXISTS contentidea_ideas (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		tenant      TEXT NOT NULL,
		idea        TEXT NOT NULL,
		platform    TEXT NOT NULL,
		format      TEXT NOT NULL DEFAULT '',
		notes       TEXT NOT NULL DEFAULT '',
		author_id   TEXT NOT NULL,
		author_name TEXT NOT NULL,
		created_at  TEXT NOT NULL,
		idem_key    TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS contentidea_ideas_tenant ON contentidea_ideas (tenant, platform, id)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS contentidea_ideas_idem ON contentidea_ideas (tenant, idem_key) WHERE idem_key <> ''`,
	applied.DDL(),
}

// New validates cfg and creates the tables if they do not exist. It returns
// an error for a missing DB, an empty, over-long or duplicate platform
// name, an unknown action or policy in Confirm, or a failed table creation.
func New(cfg Config) (*Store, error) {
	if cfg.DB == nil {
		return nil, errors.New("contentidea: Config.DB is required")
	}
	names := cfg.Platforms
	if len(names) == 0 {
		names = DefaultPlatforms
	}
	s := &Store{db: cfg.DB, now: cfg.Now, byKey: map[string]string{}, writer: sqlitex.NewWriter(cfg.DB)}
	for _, p := range names {
		p = strings.Join(strings.Fields(p), " ")
		k := platformKey(p)
		switch {
		case k == "":
			return nil, fmt.Errorf("contentidea: platform %q has no letters or digits", p)
		case len(p) > maxPlatformBytes:
			return nil, fmt.Errorf("contentidea: platform %q is longer than %d bytes", p, maxPlatformBytes)
		case s.byKey[k] != "":
			return nil, fmt.Errorf("contentidea: platform %q listed twice", p)
		}
		s.byKey[k] = p
		s.platforms = append(s.platforms, p)
	}
	for _, p := range s.platforms {
		for _, alias := range defaultAliases[platformKey(p)] {
			if _, taken := s.byKey[platformKey(alias)]; !taken {
				s.byKey[platformKey(alias)] = p
			}
		}
	}
	confirm, err := action.Policies("contentidea", map[string]tool.Confirm{
		ActionIdea: tool.ConfirmAlways,
		ActionList: tool.ConfirmNever,
	}, cfg.Confirm)
	if err != nil {
		return nil, err
	}
	s.confirm = confirm
	if s.now == nil {
		s.now = time.Now
	}
	s.reply = reply.Builder{Source: SourceName, Now: s.now, EncodeFailure: "не удалось сформировать ответ"}
	for _, stmt := range schemaDDL {
		if _, err := s.db.Exec(stmt); err != nil {
			return nil, fmt.Errorf("contentidea: create tables: %w", err)
		}
	}
	return s, nil
}

// Tools returns content_idea and list_content_ideas.
func (s *Store) Tools() []tool.Tool {
	return []tool.Tool{
		s.newAction(ActionIdea, s.saveIdea),
		s.newAction(ActionList, s.listIdeas),
	}
}

// Platforms returns the configured platforms in order.
func (s *Store) Platforms() []string { return append([]string(nil), s.platforms...) }

// Platform returns the configured platform that name means, or false.
func (s *Store) Platform(name string) (string, bool) {
	p, ok := s.byKey[platformKey(name)]
	return p, ok
}

// platformKey is the form platform names are compared in: lower case, "ё"
// as "е", letters and digits only.
func platformKey(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r == 'ё':
			b.WriteRune('е')
		case unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Ideas returns every idea of tenant, oldest first. Errors come from the
// database.
func (s *Store) Ideas(ctx context.Context, tenant string) ([]Idea, error) {
	return s.query(ctx, s.db, `WHERE tenant = ? ORDER BY id`, tenant)
}

// querier is what reads need from *sql.DB and *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// query returns the ideas selected by where, which must filter on tenant.
func (s *Store) query(ctx context.Context, q querier, where string, args ...any) ([]Idea, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, tenant, idea, platform, format, notes, author_id, author_name, created_at
		FROM contentidea_ideas `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read content ideas: %w", err)
	}
	defer rows.Close()
	var out []Idea
	for rows.Next() {
		var i Idea
		var created string
		if err := rows.Scan(&i.ID, &i.Tenant, &i.Idea, &i.Platform, &i.Format, &i.Notes, &i.AuthorID, &i.AuthorName, &created); err != nil {
			return nil, fmt.Errorf("read content ideas: %w", err)
		}
		i.CreatedAt = sqlitex.ParseStamp(created)
		out = append(out, i)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read content ideas: %w", err)
	}
	return out, nil
}
