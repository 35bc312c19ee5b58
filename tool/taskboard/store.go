package taskboard

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
)

// querier is what reads need from *sql.DB and *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

const cardColumns = `id, tenant, title, description, assignee_id, assignee_name, due,
	column_name, status, created_by, created_at, updated_at, done_at, attachment`

// queryCards returns the cards selected by where (which must filter on
// tenant) with URLs filled in.
func (b *Board) queryCards(ctx context.Context, q querier, where string, args ...any) ([]Card, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+cardColumns+` FROM taskboard_cards `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read cards: %w", err)
	}
	defer rows.Close()
	var out []Card
	for rows.Next() {
		var c Card
		var status, created, updated, done, attachment string
		if err := rows.Scan(&c.ID, &c.Tenant, &c.Title, &c.Description, &c.AssigneeID, &c.AssigneeName,
			&c.Due, &c.Column, &status, &c.CreatedBy, &created, &updated, &done, &attachment); err != nil {
			return nil, fmt.Errorf("read cards: %w", err)
		}
		if attachment != "" {
			var a tool.Attachment
			if json.Unmarshal([]byte(attachment), &a) == nil {
				c.Attachment = &a
			}
		}
		c.Status = CardStatus(status)
		c.CreatedAt, c.UpdatedAt, c.DoneAt = sqlitex.ParseStamp(created), sqlitex.ParseStamp(updated), sqlitex.ParseStamp(done)
		c.URL = b.CardURL(c.ID)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cards: %w", err)
	}
	return out, nil
}

// cardByID returns the tenant's card id, or nil when it has none.
func (b *Board) cardByID(ctx context.Context, q querier, tenant, id string) (*Card, error) {
	cards, err := b.queryCards(ctx, q, `WHERE tenant = ? AND id = ?`, tenant, id)
	if err != nil || len(cards) == 0 {
		return nil, err
	}
	return &cards[0], nil
}

// boardColumns returns the tenant's stored columns, or the configured ones
// when the board has not been created yet.
func (b *Board) boardColumns(ctx context.Context, q querier, tenant string) ([]string, error) {
	var raw string
	err := q.QueryRowContext(ctx, `SELECT columns FROM taskboard_boards WHERE tenant = ?`, tenant).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return append([]string(nil), b.columns...), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read board of tenant %s: %w", tenant, err)
	}
	var cols []string
	if err := json.Unmarshal([]byte(raw), &cols); err != nil || len(cols) == 0 {
		return nil, fmt.Errorf("read board of tenant %s: stored columns %q are unreadable", tenant, raw)
	}
	return cols, nil
}

// writeFunc runs inside a write transaction with the tenant's columns; it
// reports its outcome through variables it captures, so it must be safe to
// run again when the transaction is retried.
type writeFunc func(tx *sql.Tx, cols []string) error

// write runs fn in one transaction that first creates the tenant's board if
// needed. That first statement is a write, so the transaction holds the
// database write lock before fn reads anything, and what fn reads cannot
// change before it commits. A busy database is retried until ctx ends.
// The tenant's cached state is dropped once the transaction is over.
func (b *Board) write(ctx context.Context, tenant string, fn writeFunc) error {
	defer b.invalidate(tenant)
	return b.writer.Do(ctx, func(tx *sql.Tx) error {
		initial, _ := json.Marshal(b.columns)
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO taskboard_boards (tenant, columns, created_at) VALUES (?, ?, ?)`,
			tenant, string(initial), sqlitex.Stamp(b.now())); err != nil {
			return fmt.Errorf("create board of tenant %s: %w", tenant, err)
		}
		cols, err := b.boardColumns(ctx, tx, tenant)
		if err != nil {
			return err
		}
		return fn(tx, cols)
	})
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// idLength is the length of card ids: 36^8 ≈ 2.8e12 values.
const idLength = 8

// newCardID returns an id no card (of any tenant) has, so a card URL names
// one card.
func newCardID(ctx context.Context, tx *sql.Tx, supply func() string) (string, error) {
	for range 8 {
		id, err := randomID()
		if supply != nil {
			id, err = strings.ToLower(supply()), nil
		}
		if err != nil {
			return "", err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM taskboard_cards WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return id, nil
		}
		if err != nil {
			return "", fmt.Errorf("card id: %w", err)
		}
	}
	return "", errors.New("card id: no free id after 8 tries")
}

// randomID draws idLength characters uniformly from idAlphabet.
func randomID() (string, error) {
	const limit = 256 - 256%len(idAlphabet) // bytes at or above it would bias the draw
	out := make([]byte, 0, idLength)
	var buf [2 * idLength]byte
	for len(out) < idLength {
		if _, err := rand.Read(buf[:]); err != nil {
			return "", fmt.Errorf("card id: %w", err)
		}
		for _, v := range buf {
			if int(v) < limit && len(out) < idLength {
				out = append(out, idAlphabet[int(v)%len(idAlphabet)])
			}
		}
	}
	return string(out), nil
}

// sortByDue orders cards by due (dated first, earliest first), then by
// creation.
func sortByDue(cards []Card) {
	sort.SliceStable(cards, func(i, j int) bool {
		a, b := cards[i], cards[j]
		if (a.Due == "") != (b.Due == "") {
			return a.Due != ""
		}
		if a.Due != b.Due {
			return a.Due < b.Due
		}
		return a.CreatedAt.Before(b.CreatedAt)
	})
}
