// Package knowledge is the team knowledge base: short notes (a title, a
// text, where they came from, tags) kept per tenant in SQLite tables
// prefixed "knowledge_" and searched with SQLite's FTS5 full-text index.
//
// It provides two tools: add_knowledge (write:safe, run without
// confirmation unless configured otherwise) stores an entry with its
// source — a URL or the origin of a forwarded message when the arguments
// name one, the caller otherwise — and its date; search_knowledge (read)
// returns the tenant's best matches ranked by BM25 with a highlighted
// snippet each.
//
// # Search
//
// Entries are indexed with the unicode61 tokenizer (case folded,
// diacritics removed, so "cafe" finds "café"), after Unicode NFC
// normalization and with "ё" folded to "е", so "еще" finds "ещё".
// A query is never passed to FTS5 as written: it is split into words
// (letters and digits; everything else, including FTS5 operators, quotes,
// parentheses, "*", "-", ":" and "^", only separates words), and every
// word becomes a quoted phrase, so user text can neither fail to parse
// nor add operators, column filters or prefixes of its own.
//
// Russian and English words are inflected, so each word of three or more
// letters is reduced to a stem and matched as a prefix: one inflectional
// ending is stripped from a fixed list (Russian noun and adjective case
// endings such as -а, -и, -у, -ой, -ами, -ого; English -s, -es, -ies,
// -ed, -ing, -y), keeping at least three letters, and the stem is matched
// against the start of indexed words. "встреча", "встречи" and "встречу"
// all become встреч*, which also finds "встречей" and "встречах";
// "meetings" becomes meeting*. Shorter words match exactly, and one-letter
// words (в, с, a) are ignored when the query has longer ones. Stems that
// change inside the word (день/дня) are not joined. All words must match;
// when that finds nothing and the query has several words, any word may
// match, and BM25 puts entries with more of them first.
//
// Every query joins the index to the entries table on the caller's tenant,
// so no path returns another tenant's entry; BM25's term statistics are
// computed over the whole index, which affects only the order of a
// tenant's own results.
//
// The package does not open databases or decide at run time whether a call
// needs confirmation: the engine does that from each tool's Spec.
package knowledge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Action names.
const (
	ActionAdd    = "add_knowledge"
	ActionSearch = "search_knowledge"
)

// SourceName is the Source of every Result the tools return.
const SourceName = "knowledge"

// Config configures a Base. Zero values select the documented defaults.
type Config struct {
	// DB is a SQLite handle (modernc.org/sqlite, whose build includes
	// FTS5), possibly shared with other components. The base owns the
	// tables prefixed "knowledge_" and creates them in New. Required.
	DB *sql.DB
	// Now is the clock that dates entries; default time.Now.
	Now func() time.Time
	// Confirm overrides the confirmation policy per action name. Defaults:
	// both "never".
	Confirm map[string]tool.Confirm
}

// Entry is a stored knowledge entry as Entries returns it.
type Entry struct {
	ID     int64
	Tenant string
	Title  string
	Text   string
	// Source is where the knowledge came from as the arguments gave it (a
	// URL, a forwarded message's origin); empty when the author stated it.
	Source     string
	Tags       []string
	AuthorID   string
	AuthorName string
	CreatedAt  time.Time
}

// Origin is who or what the entry came from: Source when given, else the
// author's name.
func (e *Entry) Origin() string {
	if e.Source != "" {
		return e.Source
	}
	return e.AuthorName
}

// Base is the knowledge base of every tenant in one database. It is safe
// for concurrent use; its writes are serialized and a busy database is
// retried until the call's context ends.
type Base struct {
	db      *sql.DB
	now     func() time.Time
	confirm map[string]tool.Confirm
	writer  *sqlitex.Writer
	reply   reply.Builder
}

var schemaDDL = []string{
	`CREATE TABLE IF NOT EXISTS knowledge_entries (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		tenant      TEXT NOT NULL,
		title       TEXT NOT NULL,
		body        TEXT NOT NULL,
		source      TEXT NOT NULL DEFAULT '',
		tags        TEXT NOT NULL DEFAULT '[]',
		author_id   TEXT NOT NULL,
		author_name TEXT NOT NULL,
		created_at  TEXT NOT NULL,
		idem_key    TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS knowledge_entries_tenant ON knowledge_entries (tenant, id)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS knowledge_entries_idem ON knowledge_entries (tenant, idem_key) WHERE idem_key <> ''`,
	// The index holds the folded text of each entry under the entry's id
	// as rowid; knowledge_entries keeps the text as given.
	`CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5(
		title, body, tags,
		tokenize = 'unicode61 remove_diacritics 2'
	)`,
	applied.DDL(),
}

// searchSQL finds a tenant's entries matching an FTS5 expression, best
// first, with a snippet of the body. Parameters: the snippet's opening,
// closing and ellipsis markers and its length in words, the expression,
// the tenant and the limit.
const searchSQL = `SELECT e.id, e.title, e.body, e.source, e.tags, e.author_id, e.author_name, e.created_at,
		snippet(knowledge_fts, 1, ?, ?, ?, ?)
	FROM knowledge_fts JOIN knowledge_entries e ON e.id = knowledge_fts.rowid
	WHERE knowledge_fts MATCH ? AND e.tenant = ?
	ORDER BY bm25(knowledge_fts, 4.0, 1.0, 2.0), e.id DESC
	LIMIT ?`

// New validates cfg and creates the tables if they do not exist. It returns
// an error for a missing DB, an unknown action or policy in Confirm, a
// SQLite build without FTS5, or a failed table creation.
func New(cfg Config) (*Base, error) {
	if cfg.DB == nil {
		return nil, errors.New("knowledge: Config.DB is required")
	}
	confirm, err := action.Policies("knowledge", map[string]tool.Confirm{
		ActionAdd:    tool.ConfirmNever,
		ActionSearch: tool.ConfirmNever,
	}, cfg.Confirm)
	if err != nil {
		return nil, err
	}
	b := &Base{db: cfg.DB, now: cfg.Now, confirm: confirm, writer: sqlitex.NewWriter(cfg.DB)}
	if b.now == nil {
		b.now = time.Now
	}
	b.reply = reply.Builder{Source: SourceName, Now: b.now, EncodeFailure: "не удалось сформировать ответ базы знаний"}
	for _, stmt := range schemaDDL {
		if _, err := b.db.Exec(stmt); err != nil {
			if strings.Contains(err.Error(), "no such module: fts5") {
				return nil, fmt.Errorf("knowledge: this SQLite build has no FTS5: %w", err)
			}
			return nil, fmt.Errorf("knowledge: create tables: %w", err)
		}
	}
	return b, nil
}

// Tools returns add_knowledge and search_knowledge.
func (b *Base) Tools() []tool.Tool {
	return []tool.Tool{
		b.newAction(ActionAdd, b.add),
		b.newAction(ActionSearch, b.search),
	}
}

// Entries returns every entry of tenant, oldest first. Errors come from the
// database.
func (b *Base) Entries(ctx context.Context, tenant string) ([]Entry, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT id, tenant, title, body, source, tags, author_id, author_name, created_at
		FROM knowledge_entries WHERE tenant = ? ORDER BY id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("knowledge entries of %s: %w", tenant, err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var tags, created string
		if err := rows.Scan(&e.ID, &e.Tenant, &e.Title, &e.Text, &e.Source, &tags, &e.AuthorID, &e.AuthorName, &created); err != nil {
			return nil, fmt.Errorf("knowledge entries of %s: %w", tenant, err)
		}
		e.Tags = decodeTags(tags)
		e.CreatedAt = sqlitex.ParseStamp(created)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge entries of %s: %w", tenant, err)
	}
	return out, nil
}

func decodeTags(raw string) []string {
	var tags []string
	if err := json.Unmarshal([]byte(raw), &tags); err != nil {
		return nil
	}
	return tags
}
