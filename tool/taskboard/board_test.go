package taskboard

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

var testNow = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

func boardOn(t *testing.T, db *sql.DB) *Board {
	t.Helper()
	b, err := New(Config{
		DB:      db,
		Columns: []string{"Входящие", "В работе", "Готово"}, // a Russian board: its words decline
		Members: func(tenant string) []Member {
			switch tenant {
			case "acme":
				return []Member{
					{ID: "u1", Name: "Дмитрий Иванов"},
					{ID: "u2", Name: "Дмитрий Петров"},
					{ID: "u3", Name: "Ольга Смирнова"},
				}
			case "globex":
				return []Member{{ID: "u1", Name: "Hank Scorpio"}, {ID: "g2", Name: "Homer Simpson"}}
			}
			return nil
		},
		ExtraMembers: map[string][]Member{"acme": {{ID: "ext1", Name: "Алёна Ким"}}},
		BaseURL:      "https://board.example/",
		Now:          func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

func newBoard(t *testing.T) *Board { return boardOn(t, sqlitetest.Open(t, sqlitetest.WAL)) }

var dmitry, olga, hank = tooltest.Dmitry, tooltest.Olga, tooltest.Hank

func toolByName(t *testing.T, b *Board, name string) tool.Tool {
	return tooltest.Named(t, b.Tools(), name)
}

// run calls one action and fails the test on a Go error.
func run(t *testing.T, b *Board, name string, c tool.Caller, key, args string) tool.Result {
	t.Helper()
	return tooltest.MustCall(t, toolByName(t, b, name), c, key, args, testNow)
}

func mustStatus(t *testing.T, res tool.Result, want tool.Status) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status = %s, want %s (text %q, error %q)", res.Status, want, res.Text, res.Error)
	}
}

type dataCard struct {
	Card        cardView   `json:"card"`
	Cards       []cardView `json:"cards"`
	Changed     []string   `json:"changed"`
	AlreadyDone bool       `json:"already_done"`
	Total       int        `json:"total"`
}

// create makes a card and returns its id.
func create(t *testing.T, b *Board, c tool.Caller, args string) string {
	t.Helper()
	res := run(t, b, ActionCreate, c, "", args)
	mustStatus(t, res, tool.StatusOK)
	return tooltest.Data[dataCard](t, res).Card.ID
}

func mustCard(t *testing.T, b *Board, tenant, id string) Card {
	t.Helper()
	c, err := b.Card(context.Background(), tenant, id)
	if err != nil {
		t.Fatalf("Card(%s, %s): %v", tenant, id, err)
	}
	return c
}

func cardCount(t *testing.T, b *Board, tenant string) int {
	t.Helper()
	cards, err := b.Cards(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Cards(%s): %v", tenant, err)
	}
	return len(cards)
}

func TestCreateTask(t *testing.T) {
	b := newBoard(t)
	res := run(t, b, ActionCreate, dmitry, "", `{"title":"  Проверить   форму ","assignee":"Дмитрия Иванова","dueIso":"2026-12-01","description":"страница /signup"}`)
	mustStatus(t, res, tool.StatusOK)
	d := tooltest.Data[dataCard](t, res)
	if len(d.Card.ID) != idLength || !idPattern.MatchString(d.Card.ID) {
		t.Fatalf("card id %q is not %d url-safe characters", d.Card.ID, idLength)
	}
	want := "Создана задача «Проверить форму» (Дмитрий Иванов, до 2026-12-01) — https://board.example/board/c/" + d.Card.ID
	if res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	if res.Source != SourceName || !res.ObservedAt.Equal(testNow) {
		t.Errorf("source %q observed %v, want taskboard at %v", res.Source, res.ObservedAt, testNow)
	}
	if d.Card.URL != "https://board.example/board/c/"+d.Card.ID || d.Card.Assignee != "Дмитрий Иванов" || d.Card.Column != "Входящие" || d.Card.Status != CardOpen {
		t.Errorf("data card = %+v", d.Card)
	}
	c := mustCard(t, b, "acme", d.Card.ID)
	if c.Title != "Проверить форму" || c.AssigneeID != "u1" || c.Due != "2026-12-01" || c.Column != "Входящие" ||
		c.Status != CardOpen || c.CreatedBy != "u1" || c.Description != "страница /signup" || !c.CreatedAt.Equal(testNow) {
		t.Errorf("stored card = %+v", c)
	}
}

func TestCreateTaskOptionalFields(t *testing.T) {
	b := newBoard(t)
	tests := []struct {
		name, args                   string
		assignee, due, column, descr string
		status                       CardStatus
	}{
		{"nulls mean defaults and nobody", `{"title":"A","assignee":null,"dueIso":null,"column":null,"description":null}`, "", "", "Входящие", "", CardOpen},
		{"blank strings mean defaults", `{"title":"B","assignee":"","dueIso":" ","column":""}`, "", "", "Входящие", "", CardOpen},
		{"me and a declined column", `{"title":"C","assignee":"меня","column":"в работу"}`, "u1", "", "В работе", "", CardOpen},
		{"extra member, ё folded, RFC 3339 due", `{"title":"D","assignee":"Алене","dueIso":"2026-12-01T15:00:00+03:00"}`, "ext1", "2026-12-01T15:00:00+03:00", "Входящие", "", CardOpen},
		{"created in the done column", `{"title":"E","column":"Готово"}`, "", "", "Готово", "", CardDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCard(t, b, "acme", create(t, b, dmitry, tt.args))
			if c.AssigneeID != tt.assignee || c.Due != tt.due || c.Column != tt.column || c.Description != tt.descr || c.Status != tt.status {
				t.Errorf("stored card = %+v", c)
			}
		})
	}
}

func TestCreateTaskRefusals(t *testing.T) {
	b := newBoard(t)
	tests := []struct {
		name, args string
		status     tool.Status
		field      string
		candidates []string
		textHas    string
	}{
		{"invalid due", `{"title":"X","dueIso":"завтра"}`, tool.StatusError, "dueIso", nil, "ГГГГ-ММ-ДД"},
		{"impossible date", `{"title":"X","dueIso":"2026-02-30"}`, tool.StatusError, "dueIso", nil, "2026-02-30"},
		{"due without zone", `{"title":"X","dueIso":"2026-12-01T15:00"}`, tool.StatusError, "dueIso", nil, ""},
		{"two Dmitrys", `{"title":"X","assignee":"Дмитрий"}`, tool.StatusAmbiguous, "assignee", []string{"Дмитрий Иванов", "Дмитрий Петров"}, "Кого вы имеете в виду"},
		{"unknown member", `{"title":"X","assignee":"Петя"}`, tool.StatusNotFound, "assignee", nil, "Ольга Смирнова"},
		{"unknown column", `{"title":"X","column":"Архив"}`, tool.StatusNotFound, "column", nil, "Входящие, В работе, Готово"},
		{"blank title", `{"title":"   "}`, tool.StatusError, "title", nil, ""},
		{"unknown field", `{"title":"X","priority":"high"}`, tool.StatusError, "", nil, ""},
		{"title too long", `{"title":"` + strings.Repeat("я", board.MaxTitle+1) + `"}`, tool.StatusError, "title", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, b, ActionCreate, dmitry, "k-"+tt.name, tt.args)
			mustStatus(t, res, tt.status)
			if res.Field != tt.field {
				t.Errorf("field = %q, want %q", res.Field, tt.field)
			}
			if strings.Join(res.Candidates, "|") != strings.Join(tt.candidates, "|") {
				t.Errorf("candidates = %q, want %q", res.Candidates, tt.candidates)
			}
			if !strings.Contains(res.Text, tt.textHas) {
				t.Errorf("text %q lacks %q", res.Text, tt.textHas)
			}
		})
	}
	if n := cardCount(t, b, "acme"); n != 0 {
		t.Fatalf("refused creates stored %d cards", n)
	}
}

func TestCreateIdempotent(t *testing.T) {
	b := newBoard(t)
	args := `{"title":"Проверить форму","assignee":"Ольга"}`
	first := run(t, b, ActionCreate, dmitry, "act-1", args)
	mustStatus(t, first, tool.StatusOK)
	again := run(t, b, ActionCreate, dmitry, "act-1", args)
	mustStatus(t, again, tool.StatusOK)
	if tooltest.Data[dataCard](t, again).Card.ID != tooltest.Data[dataCard](t, first).Card.ID || again.Text != first.Text {
		t.Fatalf("replay = %s %q, want the first result %s %q", again.Data, again.Text, first.Data, first.Text)
	}
	if n := cardCount(t, b, "acme"); n != 1 {
		t.Fatalf("%d cards after a replayed key, want 1", n)
	}
	// Later changes to the card do not change the replayed answer.
	mustStatus(t, run(t, b, ActionUpdate, dmitry, "", `{"card":"`+tooltest.Data[dataCard](t, first).Card.ID+`","title":"Другое"}`), tool.StatusOK)
	if late := run(t, b, ActionCreate, dmitry, "act-1", args); string(late.Data) != string(first.Data) || late.Text != first.Text {
		t.Fatalf("late replay = %s %q, want the first result %s", late.Data, late.Text, first.Data)
	}
	// No key: no dedupe.
	run(t, b, ActionCreate, dmitry, "", args)
	run(t, b, ActionCreate, dmitry, "", args)
	if n := cardCount(t, b, "acme"); n != 3 {
		t.Fatalf("%d cards after two unkeyed creates, want 3", n)
	}
	// The key belongs to create_task; another action with it is refused.
	res := run(t, b, ActionComment, dmitry, "act-1", `{"card":"`+tooltest.Data[dataCard](t, first).Card.ID+`","text":"hi"}`)
	mustStatus(t, res, tool.StatusError)
	if cs, _ := b.Comments(context.Background(), "acme", tooltest.Data[dataCard](t, first).Card.ID); len(cs) != 0 {
		t.Fatalf("comment stored under a create key: %+v", cs)
	}
}

func TestCreateIdempotentConcurrent(t *testing.T) {
	db := sqlitetest.Open(t, sqlitetest.WAL)
	boards := []*Board{boardOn(t, db), boardOn(t, db)} // two instances sharing one database
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Go(func() {
			res, err := toolByName(t, boards[i%2], ActionCreate).Call(context.Background(),
				tool.Call{Caller: dmitry, Args: json.RawMessage(`{"title":"Один раз"}`), IdempotencyKey: "same"})
			if err != nil || res.Status != tool.StatusOK {
				t.Errorf("call %d: %v %s %s", i, err, res.Status, res.Error)
				return
			}
			var d dataCard
			_ = json.Unmarshal(res.Data, &d)
			ids[i] = d.Card.ID
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id != ids[0] {
			t.Fatalf("call %d got card %s, call 0 got %s", i, id, ids[0])
		}
	}
	if n := cardCount(t, boards[0], "acme"); n != 1 {
		t.Fatalf("%d cards, want 1", n)
	}
}

func TestConcurrentWritesWithoutBusyTimeout(t *testing.T) {
	db := sqlitetest.Open(t, "?_pragma=journal_mode(WAL)") // busy errors surface; the board retries them
	boards := []*Board{boardOn(t, db), boardOn(t, db)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			res, err := toolByName(t, boards[i%2], ActionCreate).Call(context.Background(),
				tool.Call{Caller: dmitry, Args: json.RawMessage(`{"title":"Задача"}`)})
			if err != nil || res.Status != tool.StatusOK {
				t.Errorf("call %d: %v %s %s", i, err, res.Status, res.Error)
			}
		})
	}
	wg.Wait()
	if n := cardCount(t, boards[0], "acme"); n != 20 {
		t.Fatalf("%d cards, want 20", n)
	}
}

func TestUpdateTask(t *testing.T) {
	b := newBoard(t)
	id := create(t, b, dmitry, `{"title":"Проверить форму","assignee":"me"}`)
	res := run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","assignee":"Ольге","dueIso":"2026-12-05","column":"В работе","title":null,"description":null}`)
	mustStatus(t, res, tool.StatusOK)
	c := mustCard(t, b, "acme", id)
	if c.AssigneeID != "u3" || c.AssigneeName != "Ольга Смирнова" || c.Due != "2026-12-05" || c.Column != "В работе" || c.Status != CardOpen || c.Title != "Проверить форму" {
		t.Fatalf("stored card = %+v", c)
	}
	if want := "Задача «Проверить форму» обновлена: срок до 2026-12-05, исполнитель Ольга Смирнова, колонка «В работе» — " + c.URL; res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	if got := strings.Join(tooltest.Data[dataCard](t, res).Changed, ","); got != "due,assignee,column" {
		t.Errorf("changed = %s", got)
	}

	// Into the last column: done; out of it: open again.
	mustStatus(t, run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","column":"готово"}`), tool.StatusOK)
	if c := mustCard(t, b, "acme", id); c.Status != CardDone || c.DoneAt.IsZero() {
		t.Fatalf("after moving to Готово: %+v", c)
	}
	mustStatus(t, run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","column":"Входящие","title":"Проверить форму входа"}`), tool.StatusOK)
	if c := mustCard(t, b, "acme", id); c.Status != CardOpen || c.Column != "Входящие" || c.Title != "Проверить форму входа" {
		t.Fatalf("after moving back: %+v", c)
	}

	res = run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","title":null,"dueIso":""}`)
	mustStatus(t, res, tool.StatusError)
	res = run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","dueIso":"1 декабря"}`)
	mustStatus(t, res, tool.StatusError)
	if res.Field != "dueIso" {
		t.Errorf("field = %q, want dueIso", res.Field)
	}
	res = run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","assignee":"Дмитрий"}`)
	mustStatus(t, res, tool.StatusAmbiguous)
	if c := mustCard(t, b, "acme", id); c.AssigneeID != "u3" || c.Due != "2026-12-05" {
		t.Fatalf("refused updates changed the card: %+v", c)
	}
}

func TestUpdateIdempotent(t *testing.T) {
	b := newBoard(t)
	id := create(t, b, dmitry, `{"title":"Отчёт"}`)
	args := `{"card":"` + id + `","column":"В работе"}`
	first := run(t, b, ActionUpdate, dmitry, "upd-1", args)
	mustStatus(t, first, tool.StatusOK)
	// Someone moves the card on; a retry of the same stored action must not move it back.
	mustStatus(t, run(t, b, ActionUpdate, dmitry, "", `{"card":"`+id+`","column":"Входящие"}`), tool.StatusOK)
	again := run(t, b, ActionUpdate, dmitry, "upd-1", args)
	if string(again.Data) != string(first.Data) || again.Text != first.Text || again.Status != first.Status {
		t.Fatalf("replay = %s %q, want %s %q", again.Data, again.Text, first.Data, first.Text)
	}
	if c := mustCard(t, b, "acme", id); c.Column != "Входящие" {
		t.Fatalf("replay applied the update again: column %s", c.Column)
	}
}

func TestCommentTask(t *testing.T) {
	b := newBoard(t)
	id := create(t, b, dmitry, `{"title":"Проверить форму"}`)
	res := run(t, b, ActionComment, olga, "c-1", `{"card":"проверить форму","text":"  Looks fine  "}`)
	mustStatus(t, res, tool.StatusOK)
	if want := `Comment added to task "Проверить форму" — https://board.example/board/c/` + id; res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	again := run(t, b, ActionComment, olga, "c-1", `{"card":"проверить форму","text":"  Looks fine  "}`)
	if string(again.Data) != string(res.Data) {
		t.Errorf("replay data %s, want %s", again.Data, res.Data)
	}
	cs, err := b.Comments(context.Background(), "acme", id)
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	if len(cs) != 1 || cs[0].AuthorID != "u3" || cs[0].AuthorName != "Ольга Смирнова" || cs[0].Text != "Looks fine" || !cs[0].At.Equal(testNow) {
		t.Fatalf("comments = %+v, want one by u3", cs)
	}
	mustStatus(t, run(t, b, ActionComment, olga, "", `{"card":"`+id+`","text":"   "}`), tool.StatusError)
	mustStatus(t, run(t, b, ActionComment, olga, "", `{"card":"нет такой","text":"x"}`), tool.StatusNotFound)
}

func TestCompleteTask(t *testing.T) {
	b := newBoard(t)
	id := create(t, b, dmitry, `{"title":"Проверить форму","assignee":"я"}`)
	res := run(t, b, ActionComplete, dmitry, "done-1", `{"card":"https://board.example/board/c/`+id+`"}`)
	mustStatus(t, res, tool.StatusOK)
	c := mustCard(t, b, "acme", id)
	if c.Status != CardDone || c.Column != "Готово" || !c.DoneAt.Equal(testNow) {
		t.Fatalf("stored card = %+v", c)
	}
	if want := "Задача «Проверить форму» выполнена и перенесена в «Готово» — " + c.URL; res.Text != want {
		t.Errorf("text = %q, want %q", res.Text, want)
	}
	if again := run(t, b, ActionComplete, dmitry, "done-1", `{"card":"`+id+`"}`); again.Text != res.Text || string(again.Data) != string(res.Data) {
		t.Errorf("keyed replay = %q, want %q", again.Text, res.Text)
	}
	already := run(t, b, ActionComplete, dmitry, "", `{"card":"`+id+`"}`)
	mustStatus(t, already, tool.StatusOK)
	if !tooltest.Data[dataCard](t, already).AlreadyDone || !strings.Contains(already.Text, "уже выполнена") {
		t.Errorf("second complete = %s %q, want already done", already.Data, already.Text)
	}
}

func TestListMyTasks(t *testing.T) {
	b := newBoard(t)
	later := create(t, b, olga, `{"title":"Later","assignee":"me","dueIso":"2026-12-10"}`)
	sooner := create(t, b, olga, `{"title":"Sooner","assignee":"Ольга","dueIso":"2026-12-01"}`)
	undated := create(t, b, olga, `{"title":"Someday","assignee":"u3"}`)
	done := create(t, b, olga, `{"title":"Finished","assignee":"u3"}`)
	create(t, b, olga, `{"title":"Not mine","assignee":"Дмитрий Петров"}`)
	nobodys := create(t, b, olga, `{"title":"Nobody's"}`)
	create(t, b, dmitry, `{"title":"Dmitry's, for nobody"}`)
	mustStatus(t, run(t, b, ActionComplete, olga, "", `{"card":"`+done+`"}`), tool.StatusOK)

	res := run(t, b, ActionListMine, olga, "", `{}`)
	mustStatus(t, res, tool.StatusOK)
	d := tooltest.Data[dataCard](t, res)
	var got []string
	for _, c := range d.Cards {
		got = append(got, c.ID)
	}
	// The caller's cards, and the unassigned one the caller created; the
	// unassigned card of another creator is counted, not listed.
	if strings.Join(got, ",") != strings.Join([]string{sooner, later, undated, nobodys}, ",") || d.Total != 4 {
		t.Fatalf("cards = %v (total %d), want sooner, later, undated, nobody's", got, d.Total)
	}
	if !strings.HasPrefix(res.Text, "Your open tasks (4):\n1. «Sooner» — Входящие, due 2026-12-01 — https://board.example/board/c/") ||
		!strings.Contains(res.Text, "4. «Nobody's» — Входящие (no assignee; you created it) — https://board.example/board/c/"+nobodys) ||
		!strings.HasSuffix(res.Text, "\n1 more open card on the board has no assignee.") {
		t.Errorf("text = %q", res.Text)
	}
	res = run(t, b, ActionListMine, tool.Caller{TenantID: "acme", UserID: "ext1", Language: "ru"}, "", ``)
	mustStatus(t, res, tool.StatusOK)
	if res.Text != "У вас нет открытых задач.\nОткрытых задач без исполнителя на доске: 2." {
		t.Errorf("empty list text = %q", res.Text)
	}
	mustStatus(t, run(t, b, ActionListMine, olga, "", `{"all":true}`), tool.StatusError)
}

func TestCardReference(t *testing.T) {
	b := newBoard(t)
	form := create(t, b, dmitry, `{"title":"Проверить форму регистрации"}`)
	pay := create(t, b, dmitry, `{"title":"Починить форму оплаты"}`)
	old := create(t, b, dmitry, `{"title":"Старый отчёт"}`)
	mustStatus(t, run(t, b, ActionComplete, dmitry, "", `{"card":"`+old+`"}`), tool.StatusOK)
	tests := []struct {
		ref    string
		status tool.Status
		id     string
	}{
		{form, tool.StatusOK, form},
		{strings.ToUpper(form), tool.StatusOK, form},
		{"https://board.example/board/c/" + form, tool.StatusOK, form},
		{"http://other.host/board/c/" + pay + "/slug?x=1#top", tool.StatusOK, pay},
		{"вот ссылка: https://board.example/board/c/" + pay + " — о чём она?", tool.StatusOK, pay},
		{"https://board.example/board/c/zzzz9999", tool.StatusNotFound, ""},
		{"проверить форму регистрации", tool.StatusOK, form},
		{"«Проверить  форму регистрации»", tool.StatusOK, form},
		{"оплаты", tool.StatusOK, pay},
		{"форму", tool.StatusAmbiguous, ""},
		{"Починить форму оплаты (" + pay + ")", tool.StatusOK, pay},
		{"старый отчет", tool.StatusOK, old}, // exact title finds a done card
		{"отчёт", tool.StatusNotFound, ""},   // substring looks at open cards only
		{"нет такой", tool.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"card": tt.ref, "text": "x"})
			res := run(t, b, ActionComment, dmitry, "", string(args))
			mustStatus(t, res, tt.status)
			if tt.status == tool.StatusOK {
				if got := tooltest.Data[dataCard](t, res).Card.ID; got != tt.id {
					t.Errorf("card %s, want %s", got, tt.id)
				}
			}
			if res.Status != tool.StatusOK && res.Field != "card" {
				t.Errorf("field = %q, want card", res.Field)
			}
		})
	}
	res := run(t, b, ActionComplete, dmitry, "", `{"card":"форму"}`)
	mustStatus(t, res, tool.StatusAmbiguous)
	want := []string{"Проверить форму регистрации (" + form + ")", "Починить форму оплаты (" + pay + ")"}
	if strings.Join(res.Candidates, "|") != strings.Join(want, "|") || !strings.Contains(res.Text, "Какую вы имеете в виду?") {
		t.Fatalf("ambiguous = %q %q, want candidates %q", res.Candidates, res.Text, want)
	}
	for _, id := range []string{form, pay} {
		if c := mustCard(t, b, "acme", id); c.Status != CardOpen {
			t.Fatalf("ambiguous complete changed card %s: %+v", id, c)
		}
	}
}

func TestTenantIsolation(t *testing.T) {
	b := newBoard(t)
	secret := create(t, b, dmitry, `{"title":"Секретный проект","assignee":"me","dueIso":"2026-12-01"}`)
	url := b.CardURL(secret)
	// globex has a user with the same id "u1"; nothing of acme may show through.
	for _, ref := range []string{secret, url, "Секретный проект", "секретный"} {
		for name, args := range map[string]map[string]string{
			ActionComment:  {"card": ref, "text": "x"},
			ActionComplete: {"card": ref},
			ActionUpdate:   {"card": ref, "title": "owned"},
		} {
			raw, _ := json.Marshal(args)
			if res := run(t, b, name, hank, "", string(raw)); res.Status != tool.StatusNotFound {
				t.Errorf("%s(%s) from another tenant: %s %q", name, raw, res.Status, res.Text)
			}
		}
	}
	if c := mustCard(t, b, "acme", secret); c.Title != "Секретный проект" || c.Status != CardOpen {
		t.Fatalf("acme card changed from globex: %+v", c)
	}
	if cs, _ := b.Comments(context.Background(), "acme", secret); len(cs) != 0 {
		t.Fatalf("globex commented on acme's card: %+v", cs)
	}
	if _, err := b.Card(context.Background(), "globex", secret); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Card from globex = %v, want ErrNotFound", err)
	}
	if res := run(t, b, ActionListMine, hank, "", `{}`); tooltest.Data[dataCard](t, res).Total != 0 {
		t.Fatalf("globex u1 lists acme's cards: %s", res.Data)
	}
	sections, err := b.LiveContext(context.Background(), hank, testNow)
	if err != nil {
		t.Fatalf("LiveContext: %v", err)
	}
	for _, s := range sections {
		for _, l := range s.Lines {
			if strings.Contains(l, secret) || strings.Contains(l, "Секрет") || strings.Contains(l, "Дмитрий") {
				t.Fatalf("globex context shows acme data: %q", l)
			}
		}
	}
	// The same idempotency key in another tenant is a different action.
	first := run(t, b, ActionCreate, dmitry, "shared-key", `{"title":"A"}`)
	other := run(t, b, ActionCreate, hank, "shared-key", `{"title":"B"}`)
	mustStatus(t, other, tool.StatusOK)
	if tooltest.Data[dataCard](t, other).Card.ID == tooltest.Data[dataCard](t, first).Card.ID {
		t.Fatalf("globex replayed acme's key")
	}
	if cardCount(t, b, "globex") != 1 || cardCount(t, b, "acme") != 2 {
		t.Fatalf("cards per tenant: globex %d, acme %d", cardCount(t, b, "globex"), cardCount(t, b, "acme"))
	}
}

func TestLiveContext(t *testing.T) {
	b := newBoard(t)
	overdueID := create(t, b, dmitry, `{"title":"Старая","assignee":"me","dueIso":"2026-11-19","column":"В работе"}`)
	todayID := create(t, b, dmitry, `{"title":"Сегодня","assignee":"me","dueIso":"2026-11-20"}`)
	create(t, b, dmitry, `{"title":"Чужая","assignee":"Ольга"}`)
	sections, err := b.LiveContext(context.Background(), dmitry, testNow)
	if err != nil {
		t.Fatalf("LiveContext: %v", err)
	}
	if len(sections) != 3 {
		t.Fatalf("%d sections, want 3", len(sections))
	}
	all := ""
	for _, s := range sections {
		all += s.Title + "\n" + strings.Join(s.Lines, "\n") + "\n"
	}
	for _, want := range []string{
		"Дмитрий Иванов (id u1) — the caller",
		"Алёна Ким (id ext1)",
		"Входящие → В работе → Готово",
		overdueID + " «Старая» — В работе, open, assignee the caller, due 2026-11-19 (overdue)",
		todayID + " «Сегодня» — Входящие, open, assignee the caller, due 2026-11-20",
		"«Чужая» — Входящие, open, assignee Ольга Смирнова",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("context lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "2026-11-20 (overdue)") {
		t.Errorf("context is wrong:\n%s", all)
	}
}

func TestStorageFailureIsError(t *testing.T) {
	db := sqlitetest.Open(t, sqlitetest.WAL)
	b := boardOn(t, db)
	id := create(t, b, dmitry, `{"title":"X"}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := toolByName(t, b, ActionComplete).Call(ctx, tool.Call{Caller: dmitry, Args: json.RawMessage(`{"card":"` + id + `"}`)})
	if err != nil || res.Status != tool.StatusError {
		t.Fatalf("cancelled call = %v %s, want an error result", err, res.Status)
	}
	db.Close()
	for name, args := range map[string]string{
		ActionCreate:   `{"title":"X"}`,
		ActionComplete: `{"card":"` + id + `"}`,
		ActionListMine: `{}`,
	} {
		res, err := toolByName(t, b, name).Call(context.Background(), tool.Call{Caller: dmitry, Args: json.RawMessage(args)})
		if err != nil || res.Status != tool.StatusError || res.Error == "" {
			t.Errorf("%s on a closed database = %v %s %q, want an error result", name, err, res.Status, res.Error)
		}
	}
	if _, err := toolByName(t, b, ActionListMine).Call(context.Background(), tool.Call{Caller: tool.Caller{TenantID: "acme"}}); err == nil {
		t.Errorf("call without a user id ran")
	}
}

func TestNew(t *testing.T) {
	db := sqlitetest.Open(t, sqlitetest.WAL)
	if _, err := New(Config{}); err == nil {
		t.Errorf("New without DB succeeded")
	}
	if _, err := New(Config{DB: db, Columns: []string{"A", "a"}}); err == nil {
		t.Errorf("duplicate columns accepted")
	}
	if _, err := New(Config{DB: db, Confirm: map[string]tool.Confirm{"delete_task": tool.ConfirmAlways}}); err == nil {
		t.Errorf("confirm for an unknown action accepted")
	}
	if _, err := New(Config{DB: db, Confirm: map[string]tool.Confirm{ActionUpdate: "sometimes"}}); err == nil {
		t.Errorf("unknown confirm policy accepted")
	}
	b1, err := New(Config{DB: db, Columns: []string{"Todo", "Done"}, Confirm: map[string]tool.Confirm{ActionComment: tool.ConfirmAlways}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := New(Config{DB: db}); err != nil { // tables exist already
		t.Fatalf("second New on the same database: %v", err)
	}
	wantConfirm := map[string]tool.Confirm{ActionCreate: "always", ActionUpdate: "never", ActionComment: "always", ActionComplete: "always", ActionListMine: "never"}
	var tools []tool.Tool
	for _, tl := range b1.Tools() {
		s := tl.Spec()
		tools = append(tools, tl)
		if s.Confirm != wantConfirm[s.Name] {
			t.Errorf("%s confirm = %s, want %s", s.Name, s.Confirm, wantConfirm[s.Name])
		}
		wantRisk := tool.RiskWriteSafe
		if s.Name == ActionListMine {
			wantRisk = tool.RiskRead
		}
		if s.Risk != wantRisk || s.Idempotent != wantRisk.Writes() || s.Title == "" || s.Description == "" {
			t.Errorf("%s spec = %+v", s.Name, s)
		}
	}
	if _, err := tool.NewRegistry(tools...); err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	if b1.Name() != "taskboard" {
		t.Errorf("Name = %q", b1.Name())
	}
	// The board keeps the columns it was created with.
	c := tool.Caller{TenantID: "t", UserID: "u"}
	res, _ := b1.Tools()[0].Call(context.Background(), tool.Call{Caller: c, Args: json.RawMessage(`{"title":"x"}`)})
	mustStatus(t, res, tool.StatusOK)
	cols, err := b1.Columns(context.Background(), "t")
	if err != nil || strings.Join(cols, ",") != "Todo,Done" {
		t.Fatalf("columns = %v, %v", cols, err)
	}
}

// The live context lists every open card, bounded, saying how many more.
func TestLiveContextBound(t *testing.T) {
	b := newBoard(t)
	for i := range maxContextCards + 5 {
		create(t, b, dmitry, fmt.Sprintf(`{"title":"Задача %d","assignee":"Ольга"}`, i))
	}
	sections, err := b.LiveContext(context.Background(), dmitry, testNow)
	if err != nil {
		t.Fatal(err)
	}
	lines := sections[2].Lines
	if len(lines) != maxContextCards+1 || lines[len(lines)-1] != "… and 5 more open cards (list_my_tasks lists the caller's; name others by title or id)" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

// A board whose pages no server serves prints no links: not in replies,
// not in the data the model reads.
func TestNoLinks(t *testing.T) {
	b, err := New(Config{DB: sqlitetest.Open(t, sqlitetest.WAL), NoLinks: true, BaseURL: "https://board.example",
		Members: func(string) []Member { return []Member{{ID: "u1", Name: "Дмитрий Иванов"}} },
		Now:     func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, b, ActionCreate, dmitry, "k1", `{"title":"Проверить форму"}`)
	mustStatus(t, res, tool.StatusOK)
	id := tooltest.Data[dataCard](t, res).Card.ID
	for _, r := range []tool.Result{res,
		run(t, b, ActionComment, dmitry, "k2", `{"card":"`+id+`","text":"ok"}`),
		run(t, b, ActionComplete, dmitry, "k3", `{"card":"`+id+`"}`),
		run(t, b, "list_my_tasks", dmitry, "", `{}`)} {
		if strings.Contains(r.Text, "http") || strings.Contains(r.Text, " — \n") || strings.HasSuffix(r.Text, " — ") ||
			strings.Contains(string(r.Data), "/board/c/") {
			t.Errorf("a link or its dash is printed: %q %s", r.Text, r.Data)
		}
	}
}
