package taskboard

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/internal/names"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitex"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// createTask creates a card. The idempotency key is stored on the card
// (a unique index keeps one card per key) and with the result, so a
// repeated key returns the first result and creates nothing.
func (b *Board) createTask(ctx context.Context, call tool.Call, a board.Create) tool.Result {
	c := call.Caller
	title, due, desc := a.Title, a.Due, a.Description
	attachment, r := b.attachmentOf(c, a.Attachment)
	if r != nil {
		return *r
	}
	members := b.Members(c.TenantID)
	var res tool.Result
	err := b.write(ctx, c.TenantID, func(tx *sql.Tx, cols []string) error {
		if r, done, err := b.replay(ctx, tx, call, ActionCreate); err != nil || done {
			res = r
			return err
		}
		var assignee Member
		if q := a.Assignee; q != "" {
			m, r := b.resolveAssignee(c, members, q)
			if r != nil {
				res = *r
				return nil
			}
			assignee = m
		}
		column := cols[0]
		if q := a.Column; q != "" {
			col, r := b.resolveColumn(c, cols, q)
			if r != nil {
				res = *r
				return nil
			}
			column = col
		}
		id, err := newCardID(ctx, tx, b.newID)
		if err != nil {
			return err
		}
		now := sqlitex.Stamp(b.now())
		status, doneAt := CardOpen, ""
		if column == doneColumn(cols) {
			status, doneAt = CardDone, now
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO taskboard_cards (id, tenant, title, description, assignee_id,
			assignee_name, due, column_name, status, created_by, created_at, updated_at, done_at, idem_key, attachment)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, c.TenantID, title, desc, assignee.ID, assignee.Name, due, column, string(status),
			c.UserID, now, now, doneAt, call.IdempotencyKey, attachment); err != nil {
			return fmt.Errorf("insert card: %w", err)
		}
		card, err := b.cardByID(ctx, tx, c.TenantID, id)
		if err != nil {
			return err
		}
		res = b.createdResult(c, card, cols)
		return b.recordApplied(ctx, tx, call, ActionCreate, id, res)
	})
	if err != nil {
		return b.storageFailure(c, err)
	}
	return res
}

func (b *Board) createdResult(c tool.Caller, card *Card, cols []string) tool.Result {
	who := reply.Tr(c, "без исполнителя", "unassigned")
	if card.AssigneeName != "" {
		who = card.AssigneeName
	}
	when := reply.Tr(c, "без срока", "no due date")
	if card.Due != "" {
		when = reply.Tr(c, "до ", "due ") + card.Due
	}
	where := ""
	if len(cols) > 0 && card.Column != cols[0] {
		where = reply.Tr(c, ", колонка «"+card.Column+"»", ", column \""+card.Column+"\"")
	}
	if card.Attachment != nil {
		where += reply.Tr(c, ", вложение «"+card.Attachment.Name+"»", ", attachment \""+card.Attachment.Name+"\"")
	}
	text := reply.Tr(c,
		fmt.Sprintf("Создана задача «%s» (%s, %s%s)%s", card.Title, who, when, where, board.Link(card.URL)),
		fmt.Sprintf("Created task %q (%s, %s%s)%s", card.Title, who, when, where, board.Link(card.URL)))
	return b.reply.OK(struct {
		Card cardView `json:"card"`
	}{view(card)}, text)
}

// attachmentOf checks the attachment argument: only the stored object the
// server put in place of the model's "last" is accepted, encoded for the
// card row ("" for none).
func (b *Board) attachmentOf(c tool.Caller, raw json.RawMessage) (string, *tool.Result) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var a tool.Attachment
	if err := json.Unmarshal(raw, &a); err != nil || (a.File == "" && a.URL == "") {
		r := b.reply.Failure("attachment", "attachment must be a stored file of the conversation",
			reply.Tr(c, "Прикрепить можно только присланный в разговоре файл.", "Only a file sent in the conversation can be attached."))
		return "", &r
	}
	enc, _ := json.Marshal(a)
	return string(enc), nil
}

// updateTask changes the given fields of a card; null, blank and absent
// fields stay. Moving a card into the done column marks it done, moving it
// out reopens it.
func (b *Board) updateTask(ctx context.Context, call tool.Call, a board.Update) tool.Result {
	c := call.Caller
	title, due, desc := a.Title, a.Due, a.Description
	members := b.Members(c.TenantID)
	return b.applyToCard(ctx, call, ActionUpdate, a.Card, func(tx *sql.Tx, cols []string, card *Card) (tool.Result, error) {
		next := *card
		var changed []string
		if title != "" && title != card.Title {
			next.Title = title
			changed = append(changed, "title")
		}
		if desc != "" && desc != card.Description {
			next.Description = desc
			changed = append(changed, "description")
		}
		if due != "" && due != card.Due {
			next.Due = due
			changed = append(changed, "due")
		}
		if q := a.Assignee; q != "" {
			m, r := b.resolveAssignee(c, members, q)
			if r != nil {
				return *r, nil
			}
			if m.ID != card.AssigneeID {
				next.AssigneeID, next.AssigneeName = m.ID, m.Name
				changed = append(changed, "assignee")
			}
		}
		if q := a.Column; q != "" {
			col, r := b.resolveColumn(c, cols, q)
			if r != nil {
				return *r, nil
			}
			if col != card.Column {
				next.Column = col
				changed = append(changed, "column")
				switch {
				case col == doneColumn(cols) && card.Status != CardDone:
					next.Status, next.DoneAt = CardDone, b.now()
					changed = append(changed, "status")
				case col != doneColumn(cols) && card.Status == CardDone:
					next.Status = CardOpen
					changed = append(changed, "status")
				}
			}
		}
		if len(changed) > 0 {
			doneAt := ""
			if next.Status == CardDone {
				doneAt = sqlitex.Stamp(next.DoneAt)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE taskboard_cards SET title = ?, description = ?, assignee_id = ?,
				assignee_name = ?, due = ?, column_name = ?, status = ?, done_at = ?, updated_at = ?
				WHERE tenant = ? AND id = ?`,
				next.Title, next.Description, next.AssigneeID, next.AssigneeName, next.Due, next.Column,
				string(next.Status), doneAt, sqlitex.Stamp(b.now()), c.TenantID, card.ID); err != nil {
				return tool.Result{}, fmt.Errorf("update card %s: %w", card.ID, err)
			}
		}
		return b.reply.OK(struct {
			Card    cardView `json:"card"`
			Changed []string `json:"changed"`
		}{view(&next), append([]string{}, changed...)}, updatedText(c, &next, changed)), nil
	})
}

func updatedText(c tool.Caller, card *Card, changed []string) string {
	who := reply.Tr(c, "никто", "nobody")
	if card.AssigneeName != "" {
		who = card.AssigneeName
	}
	return board.UpdatedText(c, board.Updated{Title: card.Title, URL: card.URL, Due: card.Due, Assignee: who,
		Column: card.Column, Done: card.Status == CardDone}, changed, board.ColumnWord{RU: "колонка", EN: "column"})
}

// commentTask adds a comment by the caller to a card.
func (b *Board) commentTask(ctx context.Context, call tool.Call, a board.Comment) tool.Result {
	c, text := call.Caller, a.Text
	return b.applyToCard(ctx, call, ActionComment, a.Card, func(tx *sql.Tx, cols []string, card *Card) (tool.Result, error) {
		author := strings.TrimSpace(c.Name)
		if author == "" {
			author = c.UserID
		}
		now := b.now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO taskboard_comments (tenant, card_id, author_id, author_name, text, at)
			VALUES (?, ?, ?, ?, ?, ?)`, c.TenantID, card.ID, c.UserID, author, text, sqlitex.Stamp(now)); err != nil {
			return tool.Result{}, fmt.Errorf("insert comment on %s: %w", card.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE taskboard_cards SET updated_at = ? WHERE tenant = ? AND id = ?`,
			sqlitex.Stamp(now), c.TenantID, card.ID); err != nil {
			return tool.Result{}, fmt.Errorf("touch card %s: %w", card.ID, err)
		}
		type commentView struct {
			Author string `json:"author"`
			Text   string `json:"text"`
			At     string `json:"at"`
		}
		return b.reply.OK(struct {
			Card    cardView    `json:"card"`
			Comment commentView `json:"comment"`
		}{view(card), commentView{author, text, now.UTC().Format("2006-01-02T15:04:05Z07:00")}},
			reply.Tr(c, fmt.Sprintf("Комментарий к задаче «%s» добавлен%s", card.Title, board.Link(card.URL)),
				fmt.Sprintf("Comment added to task %q%s", card.Title, board.Link(card.URL)))), nil
	})
}

// completeTask marks a card done and moves it to the last column; a card
// already done is reported as such and left as it is.
func (b *Board) completeTask(ctx context.Context, call tool.Call, a board.Complete) tool.Result {
	c := call.Caller
	return b.applyToCard(ctx, call, ActionComplete, a.Card, func(tx *sql.Tx, cols []string, card *Card) (tool.Result, error) {
		last := cols[len(cols)-1]
		already := card.Status == CardDone && card.Column == last
		next := *card
		if !already {
			now := b.now()
			next.Status, next.Column, next.DoneAt = CardDone, last, now
			if _, err := tx.ExecContext(ctx, `UPDATE taskboard_cards SET status = ?, column_name = ?, done_at = ?, updated_at = ?
				WHERE tenant = ? AND id = ?`, string(CardDone), last, sqlitex.Stamp(now), sqlitex.Stamp(now), c.TenantID, card.ID); err != nil {
				return tool.Result{}, fmt.Errorf("complete card %s: %w", card.ID, err)
			}
		}
		text := reply.Tr(c, fmt.Sprintf("Задача «%s» выполнена и перенесена в «%s»%s", next.Title, last, board.Link(next.URL)),
			fmt.Sprintf("Task %q is done and moved to %q%s", next.Title, last, board.Link(next.URL)))
		if already {
			text = reply.Tr(c, fmt.Sprintf("Задача «%s» уже выполнена%s", next.Title, board.Link(next.URL)),
				fmt.Sprintf("Task %q was already done%s", next.Title, board.Link(next.URL)))
		}
		return b.reply.OK(struct {
			Card        cardView `json:"card"`
			AlreadyDone bool     `json:"already_done,omitempty"`
		}{view(&next), already}, text), nil
	})
}

// listMyTasks returns the caller's open cards, earliest due first.
func (b *Board) listMyTasks(ctx context.Context, call tool.Call) tool.Result {
	c := call.Caller
	state, err := b.openState(ctx, c.TenantID)
	if err != nil {
		return b.storageFailure(c, err)
	}
	key := c.UserID + "\x00" + c.Language
	if r, ok := state.cachedList(key); ok {
		r.ObservedAt = b.now()
		return r
	}
	r := b.renderList(state, c)
	state.storeList(key, r)
	return r
}

// renderList builds list_my_tasks' result for caller c from state: the
// caller's open cards and the unassigned ones the caller created (a card
// created without an assignee is still the creator's to see), with how
// many other open cards have nobody.
func (b *Board) renderList(state *openState, c tool.Caller) tool.Result {
	var cards []Card
	othersUnassigned := 0
	for _, card := range state.open {
		switch {
		case card.AssigneeID == c.UserID, card.AssigneeID == "" && card.CreatedBy == c.UserID:
			cards = append(cards, card)
		case card.AssigneeID == "":
			othersUnassigned++
		}
	}
	sortByDue(cards)
	total := len(cards)
	if total > board.MaxListCards {
		cards = cards[:board.MaxListCards]
	}
	views := make([]cardView, len(cards))
	listed := make([]board.Listed, len(cards))
	for i := range cards {
		views[i] = view(&cards[i])
		listed[i] = board.Listed{Title: cards[i].Title, Column: cards[i].Column, Due: cards[i].Due, URL: cards[i].URL, Unassigned: cards[i].AssigneeID == ""}
	}
	text := board.ListText(c, listed, total) + board.UnassignedNote(c, total, othersUnassigned)
	return board.ListResult(b.reply, views, total, text)
}

// cardFunc applies a write to a resolved card inside the transaction and
// returns the outcome.
type cardFunc func(tx *sql.Tx, cols []string, card *Card) (tool.Result, error)

// applyToCard runs one write against the card named by ref: it replays a
// known idempotency key, resolves ref against the live board inside the
// write transaction, runs fn, and records the key with fn's result when
// fn succeeded.
func (b *Board) applyToCard(ctx context.Context, call tool.Call, actionName, ref string, fn cardFunc) tool.Result {
	c := call.Caller
	var res tool.Result
	err := b.write(ctx, c.TenantID, func(tx *sql.Tx, cols []string) error {
		if r, done, err := b.replay(ctx, tx, call, actionName); err != nil || done {
			res = r
			return err
		}
		card, r, err := b.resolveCard(ctx, tx, c, ref)
		if err != nil {
			return err
		}
		if r != nil {
			res = *r
			return nil
		}
		out, err := fn(tx, cols, card)
		if err != nil {
			return err
		}
		res = out
		if out.Status != tool.StatusOK {
			return nil
		}
		return b.recordApplied(ctx, tx, call, actionName, card.ID, out)
	})
	if err != nil {
		return b.storageFailure(c, err)
	}
	return res
}

// applied holds the results of applied idempotency keys.
var applied = sqlitex.Applied{Table: "taskboard_applied", IDColumn: "card_id", IDType: "TEXT"}

// recordApplied stores a successful result under call.IdempotencyKey in the
// same transaction as the write it describes; an empty key is not stored.
func (b *Board) recordApplied(ctx context.Context, tx *sql.Tx, call tool.Call, actionName, cardID string, res tool.Result) error {
	return applied.Record(ctx, tx, call, actionName, cardID, res, b.now())
}

// replay looks up call.IdempotencyKey among the tenant's applied keys, then
// among keys stored on cards. done reports that the key was seen and r is
// the answer: the stored first result for the same action, an error for
// another action. An empty key is never seen.
func (b *Board) replay(ctx context.Context, tx *sql.Tx, call tool.Call, actionName string) (r tool.Result, done bool, err error) {
	r, done, err = applied.Replay(ctx, tx, b.reply, call, actionName)
	if err != nil || done || call.IdempotencyKey == "" {
		return r, done, err
	}
	key, c := call.IdempotencyKey, call.Caller
	// A card holding the key without a stored result: answer from the card.
	var cardID string
	err = tx.QueryRowContext(ctx, `SELECT id FROM taskboard_cards WHERE tenant = ? AND idem_key = ?`, c.TenantID, key).Scan(&cardID)
	if errors.Is(err, sql.ErrNoRows) {
		return tool.Result{}, false, nil
	}
	if err != nil {
		return tool.Result{}, false, fmt.Errorf("look up idempotency key: %w", err)
	}
	if actionName != ActionCreate {
		return b.reply.KeyReused(c, key, ActionCreate, actionName), true, nil
	}
	card, err := b.cardByID(ctx, tx, c.TenantID, cardID)
	if err == nil && card == nil {
		err = errors.New("not found")
	}
	if err != nil {
		return tool.Result{}, false, fmt.Errorf("replay card %s: %w", cardID, err)
	}
	cols, err := b.boardColumns(ctx, tx, c.TenantID)
	if err != nil {
		return tool.Result{}, false, err
	}
	return b.createdResult(c, card, cols), true, nil
}

// resolveCard finds the tenant's card named by ref (an id, a card URL, a
// title with a trailing "(id)", or a title) through tx. A title whose
// trailing id is another card is ambiguous, never resolved by the id
// alone. It returns the card, or a not_found/ambiguous Result, or a
// database error.
func (b *Board) resolveCard(ctx context.Context, tx querier, c tool.Caller, ref string) (*Card, *tool.Result, error) {
	p := parseCardRef(ref)
	shown := strings.TrimSpace(ref)
	var byID *Card
	if p.id != "" {
		card, err := b.cardByID(ctx, tx, c.TenantID, p.id)
		if err != nil {
			return nil, nil, err
		}
		if card != nil && (p.bareTitle == "" || names.TitleAgrees(card.Title, p.bareTitle)) {
			return card, nil, nil
		}
		// "Buy milk (4tjszd94)" where 4tjszd94 is another card: the words
		// and the id disagree, and neither wins silently.
		byID = card
		if p.fromURL {
			r := b.reply.NotFound("card", reply.Tr(c, fmt.Sprintf("На доске нет карточки по ссылке %s.", shown),
				fmt.Sprintf("No card on this board has the link %s.", shown)))
			return nil, &r, nil
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, title, status FROM taskboard_cards WHERE tenant = ? ORDER BY created_at, rowid`, c.TenantID)
	if err != nil {
		return nil, nil, fmt.Errorf("read card titles: %w", err)
	}
	var keys []cardKey
	for rows.Next() {
		var k cardKey
		var status string
		if err := rows.Scan(&k.ID, &k.Title, &status); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read card titles: %w", err)
		}
		k.Status = CardStatus(status)
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read card titles: %w", err)
	}
	found := matchCardTitles(keys, p.title)
	if len(found) == 0 && p.bareTitle != "" {
		found = matchCardTitles(keys, p.bareTitle)
	}
	if byID != nil {
		found = append([]cardKey{{ID: byID.ID, Title: byID.Title, Status: byID.Status}}, found...)
		if len(found) == 1 {
			r := b.reply.Ambiguous("card", reply.Tr(c,
				fmt.Sprintf("«%s»: по номеру %s это задача «%s», а по названию — нет. Какую задачу вы имеете в виду?", shown, byID.ID, byID.Title),
				fmt.Sprintf("%q: the id %s is the card %q, which the words do not name. Which card do you mean?", shown, byID.ID, byID.Title)),
				[]string{fmt.Sprintf("%s (%s)", byID.Title, byID.ID)})
			return nil, &r, nil
		}
	}
	switch len(found) {
	case 0:
		r := b.reply.NotFound("card", reply.Tr(c, fmt.Sprintf("Не нашёл задачу «%s» на доске.", shown),
			fmt.Sprintf("No card matches %q on the board.", shown)))
		return nil, &r, nil
	case 1:
		card, err := b.cardByID(ctx, tx, c.TenantID, found[0].ID)
		if err == nil && card == nil {
			err = fmt.Errorf("card %s vanished inside the transaction", found[0].ID)
		}
		return card, nil, err
	}
	cands := make([]string, 0, min(len(found), board.MaxCandidates))
	quoted := make([]string, 0, cap(cands))
	for _, k := range found[:min(len(found), board.MaxCandidates)] {
		cands = append(cands, fmt.Sprintf("%s (%s)", k.Title, k.ID))
		q := fmt.Sprintf("«%s» (%s", k.Title, k.ID)
		if k.Status == CardDone {
			q += reply.Tr(c, ", выполнена", ", done")
		}
		quoted = append(quoted, q+")")
	}
	r := board.SeveralCards(b.reply, c, shown, "задач", cands, quoted, len(found))
	return nil, &r, nil
}
