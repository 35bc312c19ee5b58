package taskboard

import (
	"context"
	"slices"
	"time"
)

// The read-only board pages (the links the board prints) are built from
// these views; the HTTP API serves them as JSON to a signed-in user of the
// tenant.

// BoardView is a tenant's board: its columns in order with their cards,
// and its members.
type BoardView struct {
	Columns []ColumnView `json:"columns"`
	Members []MemberView `json:"members"`
}

// ColumnView is one column and its cards, oldest first.
type ColumnView struct {
	Name  string         `json:"name"`
	Cards []CardLineView `json:"cards"`
}

// CardLineView is a card as a board column lists it.
type CardLineView struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Assignee string `json:"assignee,omitempty"`
	Due      string `json:"due,omitempty"`
	Status   string `json:"status"`
	URL      string `json:"url"`
}

// MemberView is a member as the board page names it.
type MemberView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// CardPageView is one card with its history.
type CardPageView struct {
	Card    CardDetailView `json:"card"`
	History []HistoryEntry `json:"history"`
}

// CardDetailView is every field of a card a person reads.
type CardDetailView struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	Assignee    string     `json:"assignee,omitempty"`
	Due         string     `json:"due,omitempty"`
	Column      string     `json:"column"`
	Status      string     `json:"status"`
	CreatedBy   string     `json:"created_by,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DoneAt      *time.Time `json:"done_at,omitempty"`
	URL         string     `json:"url"`
}

// HistoryEntry is one event of a card: created, a comment, done.
type HistoryEntry struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Author string    `json:"author,omitempty"`
	Text   string    `json:"text,omitempty"`
}

// View returns tenant's board. Cards of a column the board no longer has
// are listed under their column's name after the board's own columns.
func (b *Board) View(ctx context.Context, tenant string) (BoardView, error) {
	cols, err := b.Columns(ctx, tenant)
	if err != nil {
		return BoardView{}, err
	}
	cards, err := b.Cards(ctx, tenant)
	if err != nil {
		return BoardView{}, err
	}
	out := BoardView{Columns: make([]ColumnView, len(cols)), Members: []MemberView{}}
	for i, c := range cols {
		out.Columns[i] = ColumnView{Name: c, Cards: []CardLineView{}}
	}
	for _, c := range cards {
		i := slices.IndexFunc(out.Columns, func(col ColumnView) bool { return col.Name == c.Column })
		if i < 0 {
			out.Columns = append(out.Columns, ColumnView{Name: c.Column})
			i = len(out.Columns) - 1
		}
		out.Columns[i].Cards = append(out.Columns[i].Cards, CardLineView{ID: c.ID, Title: c.Title,
			Assignee: c.AssigneeName, Due: c.Due, Status: string(c.Status), URL: b.CardURL(c.ID)})
	}
	for _, m := range b.Members(tenant) {
		out.Members = append(out.Members, MemberView{ID: m.ID, Name: m.Name})
	}
	return out, nil
}

// CardPage returns card id of tenant with its history, or an error wrapping
// ErrNotFound.
func (b *Board) CardPage(ctx context.Context, tenant, id string) (CardPageView, error) {
	c, err := b.Card(ctx, tenant, id)
	if err != nil {
		return CardPageView{}, err
	}
	comments, err := b.Comments(ctx, tenant, id)
	if err != nil {
		return CardPageView{}, err
	}
	creator := c.CreatedBy
	for _, m := range b.Members(tenant) {
		if m.ID == c.CreatedBy {
			creator = m.Name
		}
	}
	v := CardPageView{Card: CardDetailView{ID: c.ID, Title: c.Title, Description: c.Description, Assignee: c.AssigneeName,
		Due: c.Due, Column: c.Column, Status: string(c.Status), CreatedBy: creator, CreatedAt: c.CreatedAt.UTC(),
		UpdatedAt: c.UpdatedAt.UTC(), URL: b.CardURL(c.ID)}}
	v.History = append(v.History, HistoryEntry{At: c.CreatedAt.UTC(), Kind: "created", Author: creator})
	for _, cm := range comments {
		v.History = append(v.History, HistoryEntry{At: cm.At.UTC(), Kind: "comment", Author: cm.AuthorName, Text: cm.Text})
	}
	if !c.DoneAt.IsZero() {
		done := c.DoneAt.UTC()
		v.Card.DoneAt = &done
		v.History = append(v.History, HistoryEntry{At: done, Kind: "done"})
	}
	slices.SortStableFunc(v.History, func(a, b HistoryEntry) int { return a.At.Compare(b.At) })
	return v, nil
}
