// Package questions keeps the questions that running turns ask their users
// (chat.Live.Ask) until they are answered, for channels whose answers
// arrive on another path than the question went out — a Telegram button
// press, an HTTP request.
//
// A question belongs to an owner, a string the channel derives from the
// authenticated user (Telegram: chat and user id; HTTP: tenant and user),
// and only that owner's answer counts — given with a key (or channel
// identity) holding the scope the asking call ran under. Questions live in this process's
// memory only: the turn that asked waits in this process too, and a
// question outlives neither.
package questions

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/chat"
)

// Errors of Answer.
var (
	// ErrUnknown: no such open question — never asked, answered already,
	// or its wait is over.
	ErrUnknown = errors.New("no such open question")
	// ErrNotYours: the question belongs to another user.
	ErrNotYours = errors.New("the question was asked of another user")
	// ErrInvalid: neither an offered choice nor, where allowed, text.
	ErrInvalid = errors.New("not an answer the question accepts")
)

// maxOpen bounds the open questions of one owner.
const maxOpen = 8

// ErrTooMany: the owner already has maxOpen questions open.
var ErrTooMany = errors.New("too many open questions")

// Open is an open question as a channel shows it.
type Open struct {
	ID string `json:"id"`
	// Conversation is the channel's conversation the asking turn runs in,
	// when the channel tells.
	Conversation string        `json:"conversation_id,omitempty"`
	Question     chat.Question `json:"question"`
	AskedAt      time.Time     `json:"asked_at"`
}

type entry struct {
	Open
	owner  string
	answer chan chat.Answer // buffered: the first answer wins
}

// Board is the set of open questions. The zero value is not usable; use
// New. Safe for concurrent use.
type Board struct {
	mu   sync.Mutex
	open map[string]*entry
	now  func() time.Time
}

// New returns an empty board; now is the clock (nil: time.Now).
func New(now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	return &Board{open: map[string]*entry{}, now: now}
}

// Ask opens q for owner in conversation (may be empty), calls show with
// its id to present it, and waits for the answer until ctx ends. The
// question is closed when Ask returns, however it ends.
func (b *Board) Ask(ctx context.Context, owner, conversation string, q chat.Question, show func(id string) error) (chat.Answer, error) {
	if err := ctx.Err(); err != nil {
		return chat.Answer{}, err // nobody waits for the answer: do not show it
	}
	e := &entry{Open: Open{ID: newID(), Conversation: conversation, Question: q, AskedAt: b.now()}, owner: owner, answer: make(chan chat.Answer, 1)}
	b.mu.Lock()
	n := 0
	for _, o := range b.open {
		if o.owner == owner {
			n++
		}
	}
	if n >= maxOpen {
		b.mu.Unlock()
		return chat.Answer{}, ErrTooMany
	}
	b.open[e.ID] = e
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.open, e.ID)
		b.mu.Unlock()
	}()
	if err := show(e.ID); err != nil {
		return chat.Answer{}, err
	}
	select {
	case a := <-e.answer:
		return a, nil
	case <-ctx.Done():
		return chat.Answer{}, ctx.Err()
	}
}

// Answer gives the open question id the answer a of owner, answering with
// scopes (the key's or the channel identity's). A question whose Scope
// the answerer lacks reads as another user's. A choice must be one of the
// question's; text counts only where the question allows it. The first
// answer wins; later ones get ErrUnknown.
func (b *Board) Answer(id, owner string, scopes []chat.Scope, a chat.Answer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.open[id]
	if !ok {
		return ErrUnknown
	}
	if e.owner != owner || !mayAnswer(e.Question, scopes) {
		return ErrNotYours
	}
	if !accepts(e.Question, a) {
		return ErrInvalid
	}
	delete(b.open, id)
	e.answer <- a
	return nil
}

// mayAnswer: the answerer holds the scope the asking call ran under.
func mayAnswer(q chat.Question, scopes []chat.Scope) bool {
	return q.Scope == "" || slices.Contains(scopes, q.Scope)
}

func accepts(q chat.Question, a chat.Answer) bool {
	if a.Choice != "" {
		for _, c := range q.Choices {
			if c.Value == a.Choice {
				return a.Text == ""
			}
		}
		return false
	}
	return q.FreeText && a.Text != ""
}

// ChoiceAt returns the value of choice i of open question id, whoever it
// was asked of, so a channel whose buttons carry indexes can answer by
// value (and Answer can tell a stranger's press apart).
func (b *Board) ChoiceAt(id string, i int) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.open[id]
	if !ok || i < 0 || i >= len(e.Question.Choices) {
		return "", false
	}
	return e.Question.Choices[i].Value, true
}

// List returns the open questions of owner that scopes may answer,
// oldest first.
func (b *Board) List(owner string, scopes []chat.Scope) []Open {
	b.mu.Lock()
	var out []Open
	for _, e := range b.open {
		if e.owner == owner && mayAnswer(e.Question, scopes) {
			out = append(out, e.Open)
		}
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].AskedAt.Equal(out[j].AskedAt) {
			return out[i].AskedAt.Before(out[j].AskedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Typing returns the id of owner's oldest open question that takes typed
// text and scopes may answer, so a channel can take the user's next
// message as its answer.
func (b *Board) Typing(owner string, scopes []chat.Scope) (string, bool) {
	for _, o := range b.List(owner, scopes) {
		if o.Question.FreeText {
			return o.ID, true
		}
	}
	return "", false
}

// newID is 10 random base32 characters: short enough for Telegram's
// 64-byte callback data, too many to guess.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}
