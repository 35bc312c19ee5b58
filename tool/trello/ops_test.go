package trello

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/taskboard"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

// TestSameActionsAsTaskboard checks that a tenant can switch backends: the
// same action names, the same argument names and required arguments, the
// same risks and default confirmations; create_task only adds the optional
// attachment. It also compiles every schema through the registry.
func TestSameActionsAsTaskboard(t *testing.T) {
	board, err := taskboard.New(taskboard.Config{DB: sqlitetest.Open(t, "")})
	if err != nil {
		t.Fatal(err)
	}
	c := newFake(t).client(nil)
	if _, err := tool.NewRegistry(c.Tools()...); err != nil {
		t.Fatalf("registry: %v", err)
	}
	type shape struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	mine := map[string]tool.Spec{}
	for _, tl := range c.Tools() {
		mine[tl.Spec().Name] = tl.Spec()
	}
	if len(mine) != len(board.Tools()) {
		t.Fatalf("%d actions, the taskboard has %d", len(mine), len(board.Tools()))
	}
	for _, tl := range board.Tools() {
		want := tl.Spec()
		got, ok := mine[want.Name]
		if !ok {
			t.Errorf("no action %s", want.Name)
			continue
		}
		if got.Risk != want.Risk || got.Confirm != want.Confirm || got.Idempotent != want.Idempotent || got.Title != want.Title {
			t.Errorf("%s: risk/confirm/idempotent/title %v/%v/%v/%q, taskboard %v/%v/%v/%q", want.Name,
				got.Risk, got.Confirm, got.Idempotent, got.Title, want.Risk, want.Confirm, want.Idempotent, want.Title)
		}
		var gs, ws shape
		json.Unmarshal(got.InputSchema, &gs)
		json.Unmarshal(want.InputSchema, &ws)
		if !slices.Equal(gs.Required, ws.Required) {
			t.Errorf("%s: required %v, taskboard %v", want.Name, gs.Required, ws.Required)
		}
		for name := range ws.Properties {
			if _, ok := gs.Properties[name]; !ok {
				t.Errorf("%s: argument %s missing", want.Name, name)
			}
		}
		for name := range gs.Properties {
			if _, ok := ws.Properties[name]; !ok && !(want.Name == ActionCreate && name == "attachment") {
				t.Errorf("%s: extra argument %s", want.Name, name)
			}
		}
	}
}

func TestCreateTask(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	res := run(t, c, ActionCreate, dmitry, `{"title":"Проверить  оплату","assignee":"Дмитрию Петрову","dueIso":"2026-11-27","column":"в работу","description":"Через СБП"}`, "pending:p1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	posts := f.requests(http.MethodPost, "/1/cards")
	if len(posts) != 1 {
		t.Fatalf("POST /1/cards: %d, want 1", len(posts))
	}
	b := posts[0].Body
	if b["name"] != "Проверить оплату" || b["idList"] != listWork || b["desc"] != "Через СБП\n\n—\narbiter:pending:p1" ||
		b["due"] != "2026-11-27T09:00:00.000Z" || b["pos"] != "bottom" {
		t.Errorf("create body = %v", b)
	}
	if ids, _ := b["idMembers"].([]any); len(ids) != 1 || ids[0] != idDPetrov {
		t.Errorf("idMembers = %v", b["idMembers"])
	}
	if posts[0].Token != testToken || len(posts[0].Query) != 0 {
		t.Errorf("create query = %v, token %q", posts[0].Query, posts[0].Token)
	}
	// Members and lists were read for this write.
	if len(f.requests(http.MethodGet, "/1/boards/"+boardSL+"/members")) != 1 || len(f.requests(http.MethodGet, "/1/boards/"+boardSL+"/lists")) != 1 {
		t.Error("members and lists not read before the write")
	}
	card := data(t, res)["card"].(map[string]any)
	if card["id"] != "New00001" || card["column"] != "В работе" || card["assignee"] != "Дмитрий Петров (@dpetrov)" ||
		card["due"] != "2026-11-27T12:00:00+03:00" || card["status"] != "open" {
		t.Errorf("card = %v", card)
	}
	if !strings.Contains(res.Text, "Создана задача «Проверить оплату» (Дмитрий Петров (@dpetrov), до 2026-11-27 12:00, список «В работе») — https://trello.com/c/New00001/") {
		t.Errorf("text = %q", res.Text)
	}

	// Defaults: the first list, nobody, no due; "me" is the caller.
	res = run(t, c, ActionCreate, dmitry, `{"title":"Себе","assignee":"меня","dueIso":null,"column":null}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	created := f.cardByName("Себе")
	if created.IDList != listInbox || !slices.Equal(created.IDMembers, []string{idDima}) || created.Due != "" || created.Desc != "" {
		t.Errorf("created = %+v", created)
	}
}

func TestCreateValidation(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	for _, tt := range []struct{ args, field string }{
		{`{"title":"  "}`, "title"},
		{`{"title":"x","dueIso":"завтра"}`, "dueIso"},
		{`{"title":"x","attachment":{"url":"https://a.example/x","file":"f1"}}`, "attachment"},
		{`{"title":"x","attachment":{"file":"BQACAgIAAxk"}}`, "attachment"},
		{`{"title":"x","attachment":{"url":"ftp://a.example/x"}}`, "attachment"},
		{`{"title":"x","attachment":{"url":"https://api.telegram.org/file/bot123:ABC/doc.pdf"}}`, "attachment"},
		{`{"title":"x","unknown":1}`, ""},
	} {
		res := run(t, c, ActionCreate, dmitry, tt.args, "")
		if res.Status != tool.StatusError || res.Field != tt.field {
			t.Errorf("%s: %s field %q (%s)", tt.args, res.Status, res.Field, res.Error)
		}
	}
	if n := len(f.requests("", "")); n != 0 {
		t.Errorf("%d requests for invalid arguments", n)
	}
	// Without a token for the user and no default one, nothing runs.
	c2 := f.client(func(cfg *Config) {
		cfg.Token = ""
		cfg.UserTokens = func(tenant, user string) (string, bool) { return userToken, user == "u3" }
	})
	res := run(t, c2, ActionCreate, dmitry, `{"title":"x"}`, "")
	tooltest.WantStatus(t, res, tool.StatusError)
	if !strings.Contains(res.Text, "не подключён") {
		t.Errorf("text = %q", res.Text)
	}
	// The user's own connection is used when there is one.
	res = run(t, c2, ActionCreate, olga, `{"title":"От Ольги"}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if p := f.requests(http.MethodPost, "/1/cards"); len(p) != 1 || p[0].Token != userToken {
		t.Errorf("own connection not used: %+v", p)
	}
}

func TestCreateAmbiguousAndNotFound(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	res := run(t, c, ActionCreate, dmitry, `{"title":"x","assignee":"Дмитрий"}`, "k1")
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	if res.Field != "assignee" || !slices.Equal(res.Candidates, []string{"Дмитрий Иванов (@dima)", "Дмитрий Петров (@dpetrov)"}) {
		t.Errorf("candidates = %q %v", res.Field, res.Candidates)
	}
	res = run(t, c, ActionCreate, olga, `{"title":"x","assignee":"Павел"}`, "k2")
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if !strings.Contains(res.Text, "Members: Дмитрий Иванов (@dima), Дмитрий Петров (@dpetrov), Ольга Смирнова (@olga), Alena Kim (@alenakim)") {
		t.Errorf("text = %q", res.Text)
	}
	// The tenant's name for a member finds it, declined.
	res = run(t, c, ActionCreate, olga, `{"title":"Для Алёны","assignee":"Алёне Ким"}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	res = run(t, c, ActionCreate, dmitry, `{"title":"x","column":"Архив"}`, "")
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if res.Field != "column" || !strings.Contains(res.Text, "Входящие, В работе, Ревью, Готово") {
		t.Errorf("column not found: %+v", res)
	}
	f.mu.Lock()
	f.lists = append(f.lists, fakeList{"5d1a000000000000000000a5", "Готово к релизу", 70000})
	f.mu.Unlock()
	res = run(t, c, ActionCreate, dmitry, `{"title":"x","column":"гот"}`, "")
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	if !slices.Equal(res.Candidates, []string{"Готово", "Готово к релизу"}) {
		t.Errorf("candidates = %v", res.Candidates)
	}
	// "me" for a user with no Trello link is not found, never a guess.
	res = run(t, c, ActionCreate, nobody, `{"title":"x","assignee":"я"}`, "")
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if got := len(f.requests(http.MethodPost, "/1/cards")); got != 1 {
		t.Errorf("%d cards created, want only Алёна's", got)
	}
}

func TestMembersReadLiveBeforeEachWrite(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	tooltest.WantStatus(t, run(t, c, ActionCreate, dmitry, `{"title":"a","assignee":"Сидоров"}`, ""), tool.StatusNotFound)
	f.mu.Lock()
	f.members = append(f.members, apiMember{ID: "5c1a00000000000000000005", FullName: "Иван Сидоров", Username: "ivan"})
	f.mu.Unlock()
	res := run(t, c, ActionCreate, dmitry, `{"title":"a","assignee":"Сидорову"}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if got := f.cardByName("a").IDMembers; !slices.Equal(got, []string{"5c1a00000000000000000005"}) {
		t.Errorf("members = %v", got)
	}
}

func TestCreateIdempotent(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	first := run(t, c, ActionCreate, dmitry, `{"title":"Один раз","description":"текст"}`, "pending:p7")
	tooltest.WantStatus(t, first, tool.StatusOK)
	second := run(t, c, ActionCreate, dmitry, `{"title":"Один раз","description":"текст"}`, "pending:p7")
	tooltest.WantStatus(t, second, tool.StatusOK)
	if n := f.countCards("Один раз"); n != 1 {
		t.Fatalf("%d cards, want 1", n)
	}
	if d := data(t, second); d["already_created"] != true || d["card"].(map[string]any)["id"] != "New00001" {
		t.Errorf("replay data = %v", d)
	}
	if !strings.Contains(second.Text, "уже была создана") {
		t.Errorf("replay text = %q", second.Text)
	}
	// Another key creates another card.
	tooltest.WantStatus(t, run(t, c, ActionCreate, dmitry, `{"title":"Один раз"}`, "pending:p8"), tool.StatusOK)
	if n := f.countCards("Один раз"); n != 2 {
		t.Errorf("%d cards, want 2", n)
	}
}

func TestCreateConcurrentSameKey(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res := run(t, c, ActionCreate, dmitry, `{"title":"Гонка"}`, "pending:race")
			if res.Status != tool.StatusOK {
				t.Errorf("status %s: %s", res.Status, res.Error)
			}
		})
	}
	wg.Wait()
	if n := f.countCards("Гонка"); n != 1 {
		t.Errorf("%d cards, want 1", n)
	}
}

// A create whose answer is lost or refused: under a key, the marker tells
// whether the card exists, so it is made exactly once; without a key
// nothing is repeated and the outcome stays unknown.
func TestCreateReconcilesUnknownOutcome(t *testing.T) {
	for _, tt := range []struct {
		name, title, key string
		fault            fault
		status           tool.Status
		cards, posts     int
		errHas           string
	}{
		// Trello applied the create but answered 502: the marker finds the
		// card, and no second POST is made.
		{"applied", "Через шлюз", "pending:gw", fault{times: 1, status: 502, body: "Bad Gateway", apply: true}, tool.StatusOK, 1, 1, ""},
		// Not applied: the POST is tried again, once the marker is known
		// absent.
		{"not applied", "Со второй", "pending:503", fault{times: 1, status: 503, body: "Service Unavailable"}, tool.StatusOK, 1, 2, ""},
		{"no key", "Без ключа", "", fault{times: 5, status: 500, body: "Internal Server Error"}, tool.StatusError, 0, 1, "may have been applied"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			c := f.client(nil)
			tt.fault.method, tt.fault.path = http.MethodPost, "/1/cards"
			f.addFault(tt.fault)
			res := run(t, c, ActionCreate, dmitry, `{"title":"`+tt.title+`"}`, tt.key)
			tooltest.WantStatus(t, res, tt.status)
			if n := f.countCards(tt.title); n != tt.cards {
				t.Errorf("%d cards, want %d", n, tt.cards)
			}
			if n := len(f.requests(http.MethodPost, "/1/cards")); n != tt.posts {
				t.Errorf("%d POSTs, want %d", n, tt.posts)
			}
			if !strings.Contains(res.Error, tt.errHas) {
				t.Errorf("error %q, want it to say %q", res.Error, tt.errHas)
			}
		})
	}
}

func TestCreateWithAttachment(t *testing.T) {
	f := newFake(t)
	var resolved []string
	c := f.client(func(cfg *Config) {
		cfg.AttachmentURL = func(ctx context.Context, tenant, ref string) (string, error) {
			resolved = append(resolved, tenant+"/"+ref)
			return "https://files.example/" + ref, nil
		}
	})
	res := run(t, c, ActionCreate, dmitry, `{"title":"Со ссылкой","attachment":{"name":"ТЗ","url":"https://docs.example/tz.pdf"}}`, "pending:a1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	atts := f.requests(http.MethodPost, "/1/cards/5e1b")
	if len(atts) != 1 || !strings.HasSuffix(atts[0].Path, "/attachments") ||
		atts[0].Body["url"] != "https://docs.example/tz.pdf" || atts[0].Body["name"] != "ТЗ" {
		t.Fatalf("attachment requests = %+v", atts)
	}
	// The stored file reference is resolved to a URL first.
	res = run(t, c, ActionCreate, dmitry, `{"title":"С файлом","attachment":{"file":"BQACAgIAAxk"}}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if !slices.Equal(resolved, []string{"acme/BQACAgIAAxk"}) {
		t.Errorf("resolved = %v", resolved)
	}
	id := f.cardByName("С файлом").ID
	f.mu.Lock()
	got := f.attachments[id]
	f.mu.Unlock()
	if len(got) != 1 || got[0]["url"] != "https://files.example/BQACAgIAAxk" {
		t.Errorf("attachments = %v", got)
	}

	// The attachment fails after the card was made: the card is reported,
	// and the repeat adds the attachment without a second card.
	f.reset()
	f.addFault(fault{method: http.MethodPost, path: "/1/cards/5e1b00000000000000000003/attachments", times: 1, status: 400, body: "invalid value for url"})
	res = run(t, c, ActionCreate, dmitry, `{"title":"Третья","attachment":{"url":"https://docs.example/3.pdf"}}`, "pending:a3")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if d := data(t, res); !strings.Contains(d["attachment_error"].(string), "invalid value for url") {
		t.Errorf("data = %v", d)
	}
	res = run(t, c, ActionCreate, dmitry, `{"title":"Третья","attachment":{"url":"https://docs.example/3.pdf"}}`, "pending:a3")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if d := data(t, res); d["attachment_error"] != nil || d["already_created"] != true {
		t.Errorf("repeat data = %v", d)
	}
	if n := f.countCards("Третья"); n != 1 {
		t.Errorf("%d cards", n)
	}
	f.mu.Lock()
	n := len(f.attachments["5e1b00000000000000000003"])
	f.mu.Unlock()
	if n != 1 {
		t.Errorf("%d attachments after the repeat, want 1", n)
	}
	// A third repeat finds the attachment and adds nothing.
	run(t, c, ActionCreate, dmitry, `{"title":"Третья","attachment":{"url":"https://docs.example/3.pdf"}}`, "pending:a3")
	f.mu.Lock()
	n = len(f.attachments["5e1b00000000000000000003"])
	f.mu.Unlock()
	if n != 1 {
		t.Errorf("%d attachments after the third try, want 1", n)
	}
	// A stored file under a key: resolved before the replay check, so the
	// repeat neither creates a card nor attaches twice.
	for range 2 {
		tooltest.WantStatus(t, run(t, c, ActionCreate, dmitry, `{"title":"Файл с ключом","attachment":{"name":"скрин.png","file":"AgACAgIAAxk"}}`, "pending:a4"), tool.StatusOK)
	}
	card := f.cardByName("Файл с ключом")
	f.mu.Lock()
	n = len(f.attachments[card.ID])
	f.mu.Unlock()
	if n != 1 || f.countCards("Файл с ключом") != 1 {
		t.Errorf("%d attachments, %d cards; want 1 and 1", n, f.countCards("Файл с ключом"))
	}
	// A resolver failure creates nothing.
	c2 := f.client(func(cfg *Config) {
		cfg.AttachmentURL = func(context.Context, string, string) (string, error) { return "", errors.New("file expired") }
	})
	f.reset()
	res = run(t, c2, ActionCreate, dmitry, `{"title":"Не будет","attachment":{"file":"gone"}}`, "")
	if res.Status != tool.StatusError || res.Field != "attachment" || len(f.writes()) != 0 {
		t.Errorf("resolver failure: %+v, writes %v", res, f.writes())
	}
}

func TestUpdateTask(t *testing.T) {
	f := newFake(t)
	f.card("EfGh5678").Desc = "старое\n\n—\narbiter:pending:old"
	c := f.client(nil)
	res := run(t, c, ActionUpdate, dmitry, `{"card":"https://trello.com/c/EfGh5678/2-obnovit-lending","title":"Обновить лендинг v2","assignee":"Ольге","dueIso":"2026-12-01T15:00:00+03:00","description":"новое"}`, "pending:u1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	puts := f.requests(http.MethodPut, "")
	if len(puts) != 1 || puts[0].Path != "/1/cards/"+cardLanding {
		t.Fatalf("PUTs = %+v", puts)
	}
	b := puts[0].Body
	if b["name"] != "Обновить лендинг v2" || b["desc"] != "новое\n\n—\narbiter:pending:old" || b["due"] != "2026-12-01T12:00:00.000Z" ||
		len(b) != 4 {
		t.Errorf("update body = %v", b)
	}
	if ids, _ := b["idMembers"].([]any); len(ids) != 1 || ids[0] != idOlga {
		t.Errorf("idMembers = %v", b["idMembers"])
	}
	d := data(t, res)
	if !slices.Equal(anyStrings(d["changed"]), []string{"title", "description", "due", "assignee"}) {
		t.Errorf("changed = %v", d["changed"])
	}
	// The same values again change nothing and send nothing.
	f.reset()
	res = run(t, c, ActionUpdate, dmitry, `{"card":"EfGh5678","title":"Обновить лендинг v2","assignee":"olga","description":"новое"}`, "pending:u1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if len(f.writes()) != 0 || !strings.Contains(res.Text, "не изменилась") {
		t.Errorf("writes %v, text %q", f.writes(), res.Text)
	}
	// Into the done list: done; out of it: reopened.
	res = run(t, c, ActionUpdate, dmitry, `{"card":"EfGh5678","column":"Готово"}`, "")
	if b := f.requests(http.MethodPut, "")[0].Body; b["idList"] != listDone || b["dueComplete"] != true {
		t.Errorf("move to done body = %v", b)
	}
	if !slices.Equal(anyStrings(data(t, res)["changed"]), []string{"column", "status"}) || data(t, res)["card"].(map[string]any)["status"] != "done" {
		t.Errorf("done data = %s", res.Data)
	}
	f.reset()
	res = run(t, c, ActionUpdate, dmitry, `{"card":"EfGh5678","column":"в работу"}`, "")
	if b := f.requests(http.MethodPut, "")[0].Body; b["idList"] != listWork || b["dueComplete"] != false {
		t.Errorf("reopen body = %v", b)
	}
	if !strings.Contains(res.Text, "снова открыта") {
		t.Errorf("text = %q", res.Text)
	}
	tooltest.WantStatus(t, run(t, c, ActionUpdate, dmitry, `{"card":"EfGh5678"}`, ""), tool.StatusError)
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestCardResolution(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	comment := func(card string) tool.Result {
		return run(t, c, ActionComment, olga, `{"card":`+quote(card)+`,"text":"ok"}`, "")
	}
	// Title substring: ambiguous, candidates as "title (shortLink)".
	res := comment("лендинг")
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	want := []string{"Обновить лендинг (EfGh5678)", "Обновить лендинг для партнёров (IjKl9012)"}
	if res.Field != "card" || !slices.Equal(res.Candidates, want) {
		t.Errorf("candidates = %v", res.Candidates)
	}
	// Exact title wins over substrings; a candidate string resolves.
	for _, ref := range []string{"обновить лендинг", want[1], "EfGh5678", "#EfGh5678", cardLanding, "https://www.trello.com/c/EfGh5678?x=1"} {
		tooltest.WantStatus(t, comment(ref), tool.StatusOK)
	}
	for _, tt := range []struct{ ref, text string }{
		{"Несуществующая", "No open card matches"},
		{"Старая задача", "No open card matches"},        // archived cards are not open
		{"https://trello.com/c/MnOp3456", "is archived"}, // nor written to by link
		{"https://trello.com/c/Zzzz9999", "no card at"},  // 404
		{"https://trello.com/c/UvWx1234", "not on the connected board"},
		{"https://trello.com/b/Brd12345/team", "board link"},
	} {
		res := comment(tt.ref)
		if res.Status != tool.StatusNotFound || !strings.Contains(res.Text, tt.text) {
			t.Errorf("%s: %s %q", tt.ref, res.Status, res.Text)
		}
	}
	// Words that name one card and an id that names another: a question,
	// never the id's card.
	res = comment("Обновить лендинг для партнёров (EfGh5678)")
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	if !strings.Contains(res.Text, "Обновить лендинг") || len(res.Candidates) != 1 || res.Candidates[0] != want[0] {
		t.Errorf("words and id disagree: %q %v", res.Text, res.Candidates)
	}
	// An 8-letter title that looks like a short link: Trello says "invalid
	// id" or 404, and the title is tried.
	f.mu.Lock()
	f.cards = append(f.cards, &fakeCard{ID: "5e1a0000000000000000ccc7", ShortLink: "Hp1Hp1Hp", Name: "Homepage", IDList: listInbox, IDBoard: boardID})
	f.mu.Unlock()
	tooltest.WantStatus(t, comment("Homepage"), tool.StatusOK)
	// Trello failing is an error, distinct from not found.
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/EfGh5678", times: 3, status: 500, body: "Internal Server Error"})
	res = comment("EfGh5678")
	tooltest.WantStatus(t, res, tool.StatusError)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestCommentTask(t *testing.T) {
	f := newFake(t)
	c := f.client(func(cfg *Config) {
		cfg.UserTokens = func(tenant, user string) (string, bool) { return userToken, user == "u3" }
	})
	res := run(t, c, ActionComment, olga, `{"card":"Проверить форму регистрации","text":"  Воспроизвела на iOS  "}`, "pending:c1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	posts := f.requests(http.MethodPost, "/1/cards/"+cardForm+"/actions/comments")
	if len(posts) != 1 || posts[0].Body["text"] != "Воспроизвела на iOS\n\n—\narbiter:pending:c1" || posts[0].Token != userToken {
		t.Fatalf("comment requests = %+v", posts)
	}
	cm := data(t, res)["comment"].(map[string]any)
	if cm["text"] != "Воспроизвела на iOS" || cm["author"] != "Ольга Смирнова" || data(t, res)["card"].(map[string]any)["column"] != "В работе" {
		t.Errorf("data = %s", res.Data)
	}
	// The repeat finds the comment by its marker.
	res = run(t, c, ActionComment, olga, `{"card":"Проверить форму регистрации","text":"Воспроизвела на iOS"}`, "pending:c1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if n := len(f.requests(http.MethodPost, "/1/cards/"+cardForm+"/actions/comments")); n != 1 {
		t.Errorf("%d comments posted, want 1", n)
	}
	if data(t, res)["already_added"] != true {
		t.Errorf("replay data = %s", res.Data)
	}
	if g := f.requests(http.MethodGet, "/1/cards/"+cardForm+"/actions"); len(g) != 2 || g[0].Query.Get("filter") != "commentCard" {
		t.Errorf("comment scans = %+v", g)
	}
	// Applied, then 502: found by the marker, not posted twice.
	f.addFault(fault{method: http.MethodPost, path: "/1/cards/" + cardForm + "/actions/comments", times: 1, status: 502, body: "Bad Gateway", apply: true})
	tooltest.WantStatus(t, run(t, c, ActionComment, dmitry, `{"card":"AbCd1234","text":"второй"}`, "pending:c2"), tool.StatusOK)
	f.mu.Lock()
	n := len(f.comments[cardForm])
	f.mu.Unlock()
	if n != 2 {
		t.Errorf("%d comments, want 2", n)
	}
}

func TestCompleteTask(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	res := run(t, c, ActionComplete, dmitry, `{"card":"AbCd1234"}`, "pending:d1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	puts := f.requests(http.MethodPut, "")
	if len(puts) != 1 || puts[0].Path != "/1/cards/"+cardForm || puts[0].Body["idList"] != listDone || puts[0].Body["dueComplete"] != true || len(puts[0].Body) != 2 {
		t.Fatalf("PUTs = %+v", puts)
	}
	d := data(t, res)
	if d["from_column"] != "В работе" || d["card"].(map[string]any)["status"] != "done" || d["card"].(map[string]any)["column"] != "Готово" {
		t.Errorf("data = %s", res.Data)
	}
	// The repeat changes nothing.
	res = run(t, c, ActionComplete, dmitry, `{"card":"AbCd1234"}`, "pending:d1")
	if len(f.requests(http.MethodPut, "")) != 1 || data(t, res)["already_done"] != true {
		t.Errorf("repeat: %s", res.Data)
	}
	// A configured done list.
	c2 := f.client(func(cfg *Config) { cfg.DoneList = "ревью" })
	run(t, c2, ActionComplete, dmitry, `{"card":"EfGh5678"}`, "")
	if f.card("EfGh5678").IDList != listReview {
		t.Error("configured done list not used")
	}
	c3 := f.client(func(cfg *Config) { cfg.DoneList = "Архив" })
	tooltest.WantStatus(t, run(t, c3, ActionComplete, dmitry, `{"card":"IjKl9012"}`, ""), tool.StatusError)
}

// TestStateRecheckedBeforeWrite: a card moved by someone else between the
// proposal (made from the live context) and the confirmation is read
// again right before the write.
func TestStateRecheckedBeforeWrite(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	sections, err := c.LiveContext(context.Background(), dmitry, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sections[2].Lines, "\n"), "AbCd1234 «Проверить форму регистрации» — В работе") {
		t.Fatalf("context = %v", sections[2].Lines)
	}
	move := func(sl, list string) {
		f.mu.Lock()
		f.card(sl).IDList = list
		f.mu.Unlock()
	}
	// Someone finished the card meanwhile: complete_task sees it and
	// writes nothing.
	move("AbCd1234", listDone)
	f.reset()
	res := run(t, c, ActionComplete, dmitry, `{"card":"Проверить форму регистрации"}`, "pending:x1")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if len(f.writes()) != 0 || data(t, res)["already_done"] != true || !strings.Contains(res.Text, "уже в «Готово»") {
		t.Errorf("writes %v, result %s %q", f.writes(), res.Data, res.Text)
	}
	if g := f.requests(http.MethodGet, "/1/cards/"+cardForm); len(g) != 1 {
		t.Errorf("card not re-read: %+v", f.requests("", ""))
	}
	// Someone moved it to review; the update reports where it came from,
	// and moving it out of "done" reopens it only when it was done.
	move("AbCd1234", listReview)
	res = run(t, c, ActionUpdate, dmitry, `{"card":"AbCd1234","column":"В работе"}`, "")
	d := data(t, res)
	if d["from_column"] != "Ревью" || !slices.Equal(anyStrings(d["changed"]), []string{"column"}) {
		t.Errorf("data = %s", res.Data)
	}
	// Moved between the read and a concurrent request: the fake moves the
	// card right as the card is read, and the write acts on what was read
	// then, not on the proposal.
	f.mu.Lock()
	f.before = func(method, path string) {
		if method == http.MethodGet && path == "/1/cards/AbCd1234" {
			move("AbCd1234", listDone)
		}
	}
	f.mu.Unlock()
	f.reset()
	res = run(t, c, ActionUpdate, dmitry, `{"card":"AbCd1234","column":"Готово"}`, "")
	if len(f.writes()) != 0 || !strings.Contains(res.Text, "не изменилась") {
		t.Errorf("writes %v, text %q", f.writes(), res.Text)
	}
}

func TestListMyTasks(t *testing.T) {
	f := newFake(t)
	f.card("EfGh5678").Due = "2026-11-21T09:00:00.000Z"
	c := f.client(nil)
	res := run(t, c, ActionListMine, dmitry, `{}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	var d struct {
		Cards []cardView
		Total int
	}
	json.Unmarshal(res.Data, &d)
	var ids []string
	for _, v := range d.Cards {
		ids = append(ids, v.ID)
	}
	// Dmitry's open cards, earliest due first; archived and done ones left
	// out.
	if !slices.Equal(ids, []string{"EfGh5678", "AbCd1234"}) || d.Total != 2 {
		t.Errorf("cards = %v (%d)", ids, d.Total)
	}
	if !strings.Contains(res.Text, "1. «Обновить лендинг» — Входящие, до 2026-11-21 12:00") {
		t.Errorf("text = %q", res.Text)
	}
	res = run(t, c, ActionListMine, nobody, `{}`, "")
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	res = run(t, c, ActionListMine, olga, `{}`, "")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if !strings.Contains(res.Text, "Your open tasks (1)") {
		t.Errorf("text = %q", res.Text)
	}
}

func TestCallWithoutTenant(t *testing.T) {
	c := newFake(t).client(nil)
	_, err := toolByName(t, c, ActionListMine).Call(context.Background(), tool.Call{Caller: tool.Caller{UserID: "u1"}})
	if err == nil {
		t.Error("a call without a tenant ran")
	}
}

// TestPreviewResolvesTheCard: a write's preview names the card the call
// will change, asks where words and id disagree, and changes nothing.
func TestPreviewResolvesTheCard(t *testing.T) {
	f := newFake(t)
	c := f.client(nil)
	pv := toolByName(t, c, ActionComplete).(tool.Previewer)
	preview := func(ref string) tool.Preview {
		t.Helper()
		p, err := pv.Preview(context.Background(), tool.Call{Caller: olga, Args: json.RawMessage(`{"card":` + quote(ref) + `}`), Now: testNow})
		if err != nil {
			t.Fatalf("preview %s: %v", ref, err)
		}
		return p
	}
	f.reset()
	if p := preview("EfGh5678"); p.Problem != nil || !strings.Contains(p.Fields["card"], `"Обновить лендинг" (EfGh5678)`) {
		t.Errorf("preview by id = %+v", p)
	}
	if p := preview("Обновить лендинг для партнёров (EfGh5678)"); p.Problem == nil || p.Problem.Status != tool.StatusAmbiguous {
		t.Errorf("preview of disagreeing words and id = %+v, want ambiguous", p)
	}
	if n := len(f.requests(http.MethodPut, "")) + len(f.requests(http.MethodPost, "")); n != 0 {
		t.Errorf("the preview wrote %d times", n)
	}
}
