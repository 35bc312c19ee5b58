// Package taskboard is the embedded task board: one board per tenant with
// columns, cards and comments kept in SQLite tables prefixed "taskboard_",
// so the engine has a working task tool with no external account.
//
// It provides the five board actions as tool.Tool values (create_task,
// update_task, comment_task, complete_task, list_my_tasks), the live
// context the model reads before deciding (members, columns, the caller's
// open cards) as a tool.ContextSource, and read helpers for tests and views.
//
// Every argument that names something (a card, a member, a column) is
// matched against the live board by code; several matches come back as an
// ambiguous result and none as not found, never as a guess. The package
// does not open databases, serve HTTP, talk to external trackers or decide
// whether an action needs confirmation at run time: the engine does that
// from each tool's Spec.
package taskboard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Action names (the same on every board).
const (
	ActionCreate   = board.ActionCreate
	ActionUpdate   = board.ActionUpdate
	ActionComment  = board.ActionComment
	ActionComplete = board.ActionComplete
	ActionListMine = board.ActionListMine
)

// SourceName is the Name of the board as a context source and the Source of
// every Result it returns.
const SourceName = "taskboard"

// Defaults for a zero Config: the columns are in the default language
// (chat.DefaultLanguage); a board in another language names its own.
var (
	DefaultColumns = []string{"Inbox", "In progress", "Done"}
)

// DefaultBaseURL prefixes card URLs when Config.BaseURL is empty.
const DefaultBaseURL = "http://127.0.0.1:8080"

// ErrNotFound is returned (wrapped) by the read helpers for a card that does
// not exist in the given tenant.
var ErrNotFound = errors.New("taskboard: card not found")

// Member is a person cards can be assigned to.
type Member struct {
	ID   string
	Name string // full name, e.g. "Дмитрий Иванов"
}

// Config configures a Board. Zero values select the documented defaults.
type Config struct {
	// DB is a SQLite handle, possibly shared with other components. The
	// board owns the tables prefixed "taskboard_" and creates them in New.
	// Required.
	DB *sql.DB
	// Columns of each tenant's board, in order, used when the board is
	// first written. The last one is where complete_task moves a card.
	// Default DefaultColumns.
	Columns []string
	// Members returns a tenant's users, who are board members by default.
	// It is called once per call and must be safe for concurrent use.
	Members func(tenant string) []Member
	// ExtraMembers adds members per tenant.
	ExtraMembers map[string][]Member
	// Confirm overrides the confirmation policy per action name. Defaults:
	// create_task and complete_task "always", the others "never".
	Confirm map[string]tool.Confirm
	// BaseURL prefixes card URLs: BaseURL + "/board/c/" + id.
	// Default DefaultBaseURL.
	BaseURL string
	// NoLinks leaves card URLs out of every reply: no server serves the
	// board's pages.
	NoLinks bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// NewID, when set, supplies card ids (tests use it for stable ids); it
	// must return url-safe strings. Default: 8 random characters.
	NewID func() string
}

// CardStatus is the state of a card.
type CardStatus string

// Card states.
const (
	CardOpen CardStatus = "open"
	CardDone CardStatus = "done"
)

// Card is a stored card as the read helpers return it.
type Card struct {
	ID           string
	Tenant       string
	Title        string
	Description  string
	AssigneeID   string // empty when unassigned
	AssigneeName string // the member's name when the card was last assigned
	Due          string // as given: "2006-01-02" or an RFC 3339 time; empty for none
	Column       string
	Status       CardStatus
	CreatedBy    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	DoneAt       time.Time // zero unless done
	URL          string
	// Attachment is the user's file put on the card when it was created.
	Attachment *tool.Attachment
}

// Comment is one comment on a card.
type Comment struct {
	ID         int64
	CardID     string
	AuthorID   string
	AuthorName string
	Text       string
	At         time.Time
}

// Board is the task board of every tenant in one database. It is safe for
// concurrent use; writes of one Board are serialized, and each write
// re-reads the state it depends on inside its own transaction.
type Board struct {
	db      *sql.DB
	columns []string
	members func(string) []Member
	extra   map[string][]Member
	confirm map[string]tool.Confirm
	baseURL string
	newID   func() string
	now     func() time.Time
	writer  *sqlitex.Writer
	reply   reply.Builder
	cache   stateCache
}

var _ tool.ContextSource = (*Board)(nil)

var schemaDDL = []string{
	`CREATE TABLE IF NOT EXISTS taskboard_boards (
		tenant     TEXT PRIMARY KEY,
		columns    TEXT NOT NULL,
		created_at TEXT NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS taskboard_cards (
		id            TEXT PRIMARY KEY,
		tenant        TEXT NOT NULL,
		title         TEXT NOT NULL,
		description   TEXT NOT NULL DEFAULT '',
		assignee_id   TEXT NOT NULL DEFAULT '',
		assignee_name TEXT NOT NULL DEFAULT '',
		due           TEXT NOT NULL DEFAULT '',
		column_name   TEXT NOT NULL,
		status        TEXT NOT NULL,
		created_by    TEXT NOT NULL,
		created_at    TEXT NOT NULL,
		updated_at    TEXT NOT NULL,
		done_at       TEXT NOT NULL DEFAULT '',
		idem_key      TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS taskboard_cards_tenant ON taskboard_cards (tenant, status, assignee_id)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS taskboard_cards_idem ON taskboard_cards (tenant, idem_key) WHERE idem_key <> ''`,
	`CREATE TABLE IF NOT EXISTS taskboard_comments (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		tenant      TEXT NOT NULL,
		card_id     TEXT NOT NULL,
		author_id   TEXT NOT NULL,
		author_name TEXT NOT NULL,
		text        TEXT NOT NULL,
		at          TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS taskboard_comments_card ON taskboard_comments (tenant, card_id, id)`,
	applied.DDL(),
}

// New validates cfg and creates the board tables if they do not exist. It
// returns an error for a missing DB, an empty or duplicate column name, an
// unknown action or policy in Confirm, or a failed table creation.
func New(cfg Config) (*Board, error) {
	if cfg.DB == nil {
		return nil, errors.New("taskboard: Config.DB is required")
	}
	cols := cfg.Columns
	if len(cols) == 0 {
		cols = DefaultColumns
	}
	seen := make(map[string]bool, len(cols))
	clean := make([]string, 0, len(cols))
	for _, c := range cols {
		c = strings.Join(strings.Fields(c), " ")
		if c == "" {
			return nil, errors.New("taskboard: empty column name")
		}
		if seen[names.Fold(c)] {
			return nil, fmt.Errorf("taskboard: column %q listed twice", c)
		}
		seen[names.Fold(c)] = true
		clean = append(clean, c)
	}
	confirm, err := action.Policies("taskboard", board.DefaultConfirm(), cfg.Confirm)
	if err != nil {
		return nil, err
	}
	b := &Board{
		db:      cfg.DB,
		columns: clean,
		members: cfg.Members,
		extra:   cfg.ExtraMembers,
		confirm: confirm,
		baseURL: strings.TrimRight(cfg.BaseURL, "/"),
		now:     cfg.Now,
		newID:   cfg.NewID,
		writer:  sqlitex.NewWriter(cfg.DB),
	}
	switch {
	case cfg.NoLinks:
		b.baseURL = ""
	case b.baseURL == "":
		b.baseURL = DefaultBaseURL
	}
	if b.now == nil {
		b.now = time.Now
	}
	b.reply = reply.Builder{Source: SourceName, Now: b.now, EncodeFailure: "не удалось сформировать ответ доски"}
	for _, stmt := range schemaDDL {
		if _, err := b.db.Exec(stmt); err != nil {
			return nil, fmt.Errorf("taskboard: create tables: %w", err)
		}
	}
	if err := b.addColumn("taskboard_cards", "attachment", "TEXT NOT NULL DEFAULT ''"); err != nil {
		return nil, err
	}
	return b, nil
}

// addColumn adds a column that a board created by an earlier version lacks.
func (b *Board) addColumn(table, column, decl string) error {
	rows, err := b.db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return fmt.Errorf("taskboard: read %s columns: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("taskboard: read %s columns: %w", table, err)
		}
		if name == column {
			return nil
		}
	}
	if _, err := b.db.Exec(`ALTER TABLE ` + table + ` ADD COLUMN ` + column + ` ` + decl); err != nil {
		return fmt.Errorf("taskboard: add %s.%s: %w", table, column, err)
	}
	return nil
}

// Name returns "taskboard".
func (b *Board) Name() string { return SourceName }

// Tools returns the board's actions: create_task, update_task,
// comment_task, complete_task and list_my_tasks.
func (b *Board) Tools() []tool.Tool {
	return board.Tools(board.Config{Owner: SourceName, Docs: docs, Confirm: b.confirm, Reply: b.reply, Backend: board.Backend{
		Create: b.createTask, Update: b.updateTask, Comment: b.commentTask, Complete: b.completeTask,
		ListMine: b.listMyTasks, Preview: b.preview,
	}})
}

// CardURL returns the URL of card id; empty with Config.NoLinks.
func (b *Board) CardURL(id string) string {
	if b.baseURL == "" {
		return ""
	}
	return b.baseURL + "/board/c/" + id
}

// Columns returns the tenant's columns in order: the stored ones once the
// board has been written, the configured ones before.
func (b *Board) Columns(ctx context.Context, tenant string) ([]string, error) {
	return b.boardColumns(ctx, b.db, tenant)
}

// Members returns the tenant's live members: the users from Config.Members
// followed by Config.ExtraMembers, the first of each ID kept.
func (b *Board) Members(tenant string) []Member {
	var all []Member
	if b.members != nil {
		all = append(all, b.members(tenant)...)
	}
	all = append(all, b.extra[tenant]...)
	seen := make(map[string]bool, len(all))
	out := all[:0:0]
	for _, m := range all {
		m.ID = strings.TrimSpace(m.ID)
		if m.ID == "" || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		m.Name = strings.Join(strings.Fields(m.Name), " ")
		if m.Name == "" {
			m.Name = m.ID
		}
		out = append(out, m)
	}
	return out
}

// Card returns card id of tenant, or an error wrapping ErrNotFound when the
// tenant has no such card. Other errors come from the database.
func (b *Board) Card(ctx context.Context, tenant, id string) (Card, error) {
	c, err := b.cardByID(ctx, b.db, tenant, id)
	if err != nil {
		return Card{}, err
	}
	if c == nil {
		return Card{}, fmt.Errorf("card %s of tenant %s: %w", id, tenant, ErrNotFound)
	}
	return *c, nil
}

// Cards returns every card of tenant, oldest first.
func (b *Board) Cards(ctx context.Context, tenant string) ([]Card, error) {
	return b.queryCards(ctx, b.db, `WHERE tenant = ? ORDER BY created_at, rowid`, tenant)
}

// Comments returns the comments on card id of tenant, oldest first; none
// for a card the tenant does not have.
func (b *Board) Comments(ctx context.Context, tenant, cardID string) ([]Comment, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT id, card_id, author_id, author_name, text, at
		FROM taskboard_comments WHERE tenant = ? AND card_id = ? ORDER BY id`, tenant, cardID)
	if err != nil {
		return nil, fmt.Errorf("comments of card %s: %w", cardID, err)
	}
	defer rows.Close()
	var out []Comment
	for rows.Next() {
		var c Comment
		var at string
		if err := rows.Scan(&c.ID, &c.CardID, &c.AuthorID, &c.AuthorName, &c.Text, &at); err != nil {
			return nil, fmt.Errorf("comments of card %s: %w", cardID, err)
		}
		c.At = sqlitex.ParseStamp(at)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("comments of card %s: %w", cardID, err)
	}
	return out, nil
}

// Context limits: the prompt gets at most this many of the caller's cards.
const maxContextCards = 30

// LiveContext returns the board facts the model needs before deciding: the
// members (the caller marked), the columns, and the caller's open cards
// with id, column, due and status, one compact line each. It only reads;
// an error means the database could not be read.
func (b *Board) LiveContext(ctx context.Context, caller tool.Caller, now time.Time) ([]tool.ContextSection, error) {
	state, err := b.openState(ctx, caller.TenantID)
	if err != nil {
		return nil, err
	}
	minute := now.Unix() / 60
	if sections, ok := state.cachedContext(caller.UserID, caller.Timezone, minute); ok {
		return sections, nil
	}
	sections := b.renderContext(state, caller, now)
	state.storeContext(caller.UserID, caller.Timezone, minute, sections)
	return sections, nil
}

// renderContext renders the live context of caller from state.
func (b *Board) renderContext(state *openState, caller tool.Caller, now time.Time) []tool.ContextSection {
	cols, open := state.columns, state.open
	members := b.Members(caller.TenantID)
	memberLines := make([]string, 0, len(members))
	for _, m := range members {
		line := m.Name + " (id " + m.ID + ")"
		if m.ID == caller.UserID {
			line += " — the caller"
		}
		memberLines = append(memberLines, line)
	}
	if len(memberLines) == 0 {
		memberLines = append(memberLines, "(no members)")
	}
	loc := reply.Location(caller)
	// Every open card, the caller's first, each by due date; bounded.
	var mine, others []Card
	for _, c := range open {
		if c.AssigneeID == caller.UserID {
			mine = append(mine, c)
		} else {
			others = append(others, c)
		}
	}
	sortByDue(mine)
	sortByDue(others)
	all := append(mine, others...)
	cardLines := make([]string, 0, min(len(all), maxContextCards)+1)
	for i, c := range all {
		if i == maxContextCards {
			cardLines = append(cardLines, fmt.Sprintf("… and %d more open cards (list_my_tasks lists the caller's; name others by title or id)", len(all)-i))
			break
		}
		who := "nobody"
		switch {
		case c.AssigneeID == caller.UserID:
			who = "the caller"
		case c.AssigneeName != "":
			who = c.AssigneeName
		}
		line := fmt.Sprintf("%s «%s» — %s, %s, assignee %s", c.ID, c.Title, c.Column, c.Status, who)
		if c.Due != "" {
			line += ", due " + c.Due
			if overdue(c.Due, now, loc) {
				line += " (overdue)"
			}
		}
		cardLines = append(cardLines, line)
	}
	if len(all) == 0 {
		cardLines = append(cardLines, "(none)")
	}
	return []tool.ContextSection{
		{Title: "Task board members", Lines: memberLines},
		{Title: "Task board columns", Lines: []string{
			strings.Join(cols, " → ") + " (complete_task moves a card to «" + cols[len(cols)-1] + "»)",
		}},
		{Title: "Open cards on the task board", Lines: cardLines},
	}
}

// overdue reports whether due (a date or an RFC 3339 time) is past: a date
// once its day is over in loc.
func overdue(due string, now time.Time, loc *time.Location) bool {
	if d, err := time.Parse(time.DateOnly, due); err == nil {
		return now.In(loc).Format(time.DateOnly) > d.Format(time.DateOnly)
	}
	if t, err := time.Parse(time.RFC3339, due); err == nil {
		return now.After(t)
	}
	return false
}
