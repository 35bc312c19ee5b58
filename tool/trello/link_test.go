package trello

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

func TestShortLink(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means rejected
	}{
		{"https://trello.com/c/AbCd1234", "AbCd1234"},
		{"http://trello.com/c/AbCd1234", "AbCd1234"},
		{"https://www.trello.com/c/AbCd1234", "AbCd1234"},
		{"http://www.trello.com/c/AbCd1234", "AbCd1234"},
		{"trello.com/c/AbCd1234", "AbCd1234"},
		{"www.trello.com/c/AbCd1234", "AbCd1234"},
		{"https://trello.com/c/AbCd1234/", "AbCd1234"},
		{"https://trello.com/c/AbCd1234/12-proverit-formu", "AbCd1234"},
		{"https://trello.com/c/AbCd1234/12-proverit-formu/", "AbCd1234"},
		{"https://trello.com/c/AbCd1234/12-%D0%BF%D1%80%D0%BE%D0%B2%D0%B5%D1%80%D0%B8%D1%82%D1%8C", "AbCd1234"},
		{"https://trello.com/c/AbCd1234?utm_source=telegram", "AbCd1234"},
		{"https://trello.com/c/AbCd1234/12-slug?filter=member:dima#comment-5f1a", "AbCd1234"},
		{"https://trello.com/c/AbCd1234#action-5f1a", "AbCd1234"},
		{"HTTPS://TRELLO.COM/c/AbCd1234", "AbCd1234"},
		{"  <https://trello.com/c/AbCd1234>. ", "AbCd1234"},
		{"(https://trello.com/c/AbCd1234/3-x)", "AbCd1234"},
		{"«https://trello.com/c/AbCd1234»", "AbCd1234"},
		// Rejections.
		{"https://trello.com/b/Brd12345", ""},
		{"https://trello.com/b/Brd12345/team-board", ""},
		{"https://trello.com/c/", ""},
		{"https://trello.com/c", ""},
		{"https://trello.com/", ""},
		{"https://trello.com/c/Ab-d1234", ""},
		{"https://trello.com/c/Ab1", ""},
		{"https://trello.com/c/AbCd1234/12-slug/extra", ""},
		{"https://trello.com/c/AbCd1234//", ""},
		{"https://trello.com/u/dima/cards", ""},
		{"https://evil.example/c/AbCd1234", ""},
		{"https://trello.com.evil.example/c/AbCd1234", ""},
		{"https://nottrello.com/c/AbCd1234", ""},
		{"https://evil.example/?next=https://trello.com/c/AbCd1234", ""},
		{"https://user:pw@trello.com/c/AbCd1234", ""},
		{"https://trello.com:8443/c/AbCd1234", ""},
		{"ftp://trello.com/c/AbCd1234", ""},
		{"javascript://trello.com/c/AbCd1234", ""},
		{"see https://trello.com/c/AbCd1234 please", ""},
		{"AbCd1234", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := ShortLink(tt.in)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("ShortLink(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestParseCardRef(t *testing.T) {
	tests := []struct {
		in                string
		id, title, bare   string
		fromURL, boardURL bool
	}{
		{in: "https://trello.com/c/AbCd1234/1-x", id: "AbCd1234", fromURL: true},
		{in: "https://trello.com/b/Brd12345/team", boardURL: true},
		{in: "AbCd1234", id: "AbCd1234", title: "abcd1234"},
		{in: "#AbCd1234", id: "AbCd1234", title: "#abcd1234"},
		{in: "5e1a000000000000000000c1", id: "5e1a000000000000000000c1", title: "5e1a000000000000000000c1"},
		{in: "Обновить лендинг (EfGh5678)", id: "EfGh5678", title: "обновить лендинг (efgh5678)", bare: "обновить лендинг"},
		{in: "  «Обновить  лендинг» ", title: "обновить лендинг"},
	}
	for _, tt := range tests {
		got := parseCardRef(tt.in)
		want := cardRef{id: tt.id, fromURL: tt.fromURL, boardURL: tt.boardURL, title: tt.title, bareTitle: tt.bare}
		if got != want {
			t.Errorf("parseCardRef(%q) = %+v, want %+v", tt.in, got, want)
		}
	}
}

func TestReadLink(t *testing.T) {
	f := newFake(t)
	f.card("AbCd1234").Desc = "Форма падает на шаге 2\n\n—\narbiter:pending:p1"
	c := f.client(nil)
	ctx := context.Background()

	res, ok := c.ReadLink(ctx, dmitry, "https://trello.com/c/AbCd1234/1-proverit-formu?utm=tg")
	if !ok {
		t.Fatal("ReadLink did not claim a Trello card link")
	}
	tooltest.WantStatus(t, res, tool.StatusOK)
	gets := f.requests(http.MethodGet, "/1/cards/AbCd1234")
	if len(gets) != 1 {
		t.Fatalf("card reads = %d, want 1", len(gets))
	}
	if q := gets[0].Query; !strings.Contains(q.Get("fields"), "desc") || q.Get("list") != "true" || q.Get("checklists") != "all" {
		t.Errorf("card read query = %v", q)
	}
	var d struct {
		Card struct {
			ID, Title, URL, Due, Column, Status, Description string
			Members                                          []string
			Checklists                                       []checklistView
		}
	}
	if err := json.Unmarshal(res.Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Card.ID != "AbCd1234" || d.Card.Title != "Проверить форму регистрации" || d.Card.Status != statusOpen ||
		d.Card.Column != "В работе" || d.Card.Description != "Форма падает на шаге 2" ||
		d.Card.Due != "2026-11-25T12:00:00+03:00" || !strings.HasPrefix(d.Card.URL, "https://trello.com/c/AbCd1234/") {
		t.Errorf("card = %+v", d.Card)
	}
	if len(d.Card.Members) != 1 || d.Card.Members[0] != "Дмитрий Иванов (@dima)" {
		t.Errorf("members = %v", d.Card.Members)
	}
	if len(d.Card.Checklists) != 1 || d.Card.Checklists[0].Done != 1 || d.Card.Checklists[0].Total != 2 {
		t.Errorf("checklists = %+v", d.Card.Checklists)
	}
	for _, want := range []string{"«Проверить форму регистрации»", "список «В работе»", "открыта", "срок 2026-11-25 12:00", "Шаги 1/2", "Описание: Форма падает на шаге 2"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "arbiter:") || strings.Contains(string(res.Data), "arbiter:") {
		t.Errorf("marker shown: %s", res.Text)
	}

	// Not a card link: not claimed, nothing requested.
	f.reset()
	for _, link := range []string{"https://trello.com/b/Brd12345/team", "https://example.com/c/AbCd1234", "о чём эта задача"} {
		if _, ok := c.ReadLink(ctx, dmitry, link); ok {
			t.Errorf("ReadLink claimed %q", link)
		}
	}
	if n := len(f.requests("", "")); n != 0 {
		t.Errorf("%d requests for links that are not cards", n)
	}

	// Unknown card: not found, distinct from an error.
	res, ok = c.ReadLink(ctx, dmitry, "https://trello.com/c/Zzzz9999")
	if !ok {
		t.Fatal("unknown card link not claimed")
	}
	tooltest.WantStatus(t, res, tool.StatusNotFound)

	// A card of another board is not read out.
	res, _ = c.ReadLink(ctx, olga, "https://trello.com/c/UvWx1234")
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if !strings.Contains(res.Text, "not on the connected Trello board") {
		t.Errorf("text = %q", res.Text)
	}

	// An archived card reads as archived.
	res, _ = c.ReadLink(ctx, olga, "trello.com/c/MnOp3456")
	tooltest.WantStatus(t, res, tool.StatusOK)
	if !strings.Contains(string(res.Data), `"status":"archived"`) || !strings.Contains(res.Text, "archived") {
		t.Errorf("archived card: %s / %s", res.Data, res.Text)
	}

	// Trello refusing the token is an error, never not found.
	f.addFault(fault{method: http.MethodGet, path: "/1/cards/AbCd1234", times: 1, status: 401, body: "unauthorized card permission requested"})
	res, _ = c.ReadLink(ctx, dmitry, "https://trello.com/c/AbCd1234")
	tooltest.WantStatus(t, res, tool.StatusError)
	if res.Error != "Trello refused the credentials (status 401)" {
		t.Errorf("error = %q", res.Error)
	}
}
