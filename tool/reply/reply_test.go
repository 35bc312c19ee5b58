package reply

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

var clock = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func builder() Builder {
	return Builder{Source: "test", Now: func() time.Time { return clock }, EncodeFailure: "не удалось"}
}

func TestTr(t *testing.T) {
	tests := []struct {
		lang string
		want string
	}{
		{"en", "en"},
		{"EN-us", "en"},
		{"en_GB", "en"},
		{"ru", "ru"},
		{"ru-RU", "ru"},
		{"", "en"},   // the default language (chat.DefaultLanguage)
		{"de", "en"}, // no texts in German: the default
	}
	for _, tt := range tests {
		c := tool.Caller{Language: tt.lang}
		if got := Tr(c, "ru", "en"); got != tt.want {
			t.Errorf("Tr(%q) = %q, want %q", tt.lang, got, tt.want)
		}
		if English(c) != (tt.want == "en") {
			t.Errorf("English(%q) = %v", tt.lang, English(c))
		}
	}
}

func TestLocation(t *testing.T) {
	tests := []struct{ zone, want string }{
		{"", "UTC"},
		{"Europe/Berlin", "Europe/Berlin"},
		{"Europe/Berlin", "Europe/Berlin"}, // from the cache
		{"Nowhere/Atlantis", "UTC"},
		{"Nowhere/Atlantis", "UTC"},
	}
	for _, tt := range tests {
		if got := Location(tool.Caller{Timezone: tt.zone}).String(); got != tt.want {
			t.Errorf("Location(%q) = %s, want %s", tt.zone, got, tt.want)
		}
	}
}

func TestBuilder(t *testing.T) {
	b := builder()
	en := tool.Caller{Language: "en"}
	tests := []struct {
		name string
		got  tool.Result
		want tool.Result
	}{
		{"ok", b.OK(map[string]int{"n": 1}, "done"),
			tool.Result{Status: tool.StatusOK, Data: json.RawMessage(`{"n":1}`), Text: "done"}},
		{"ok without encodable data", b.OK(make(chan int), "done"),
			tool.Result{Status: tool.StatusError, Error: "encode result: json: unsupported type: chan int", Text: "не удалось"}},
		{"with status", b.WithStatus(tool.StatusNotFound, []string{"a"}, "none"),
			tool.Result{Status: tool.StatusNotFound, Data: json.RawMessage(`["a"]`), Text: "none"}},
		{"failure", b.Failure("title", "title is empty", "Нет названия."),
			tool.Result{Status: tool.StatusError, Field: "title", Error: "title is empty", Text: "Нет названия."}},
		{"not found", b.NotFound("card", "Нет карточки."),
			tool.Result{Status: tool.StatusNotFound, Field: "card", Text: "Нет карточки."}},
		{"ambiguous", b.Ambiguous("assignee", "Кого?", []string{"A", "B"}),
			tool.Result{Status: tool.StatusAmbiguous, Field: "assignee", Text: "Кого?", Candidates: []string{"A", "B"}}},
		{"key reused", b.KeyReused(en, "k1", "create_task", "comment_task"),
			tool.Result{Status: tool.StatusError, Error: `idempotency key "k1" was already used for create_task, not comment_task`,
				Text: "This action key was already used for another action; refused."}},
		{"key reused in Russian", b.KeyReused(tool.Caller{Language: "ru"}, "k1", "a", "b"),
			tool.Result{Status: tool.StatusError, Error: `idempotency key "k1" was already used for a, not b`,
				Text: "Это действие уже выполнялось как другое; повтор отклонён."}},
	}
	for _, tt := range tests {
		tt.want.Source, tt.want.ObservedAt = "test", clock
		got, _ := json.Marshal(tt.got)
		want, _ := json.Marshal(tt.want)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, want)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	type args struct {
		Title string  `json:"title"`
		Due   *string `json:"dueIso"`
	}
	tests := []struct {
		raw     string
		wantErr string // part of Result.Error; "" for success
		want    args
	}{
		{``, "", args{}},
		{`  null `, "", args{}},
		{`{}`, "", args{}},
		{`{"title": "Отчёт"}`, "", args{Title: "Отчёт"}},
		{`{"title": "x", "extra": 1}`, `unknown field "extra"`, args{}},
		{`{"title": "x"} {}`, "trailing data after the arguments object", args{}},
		{`{"title": 5}`, "cannot unmarshal number", args{}},
		{`{"title": `, "unexpected EOF", args{}},
	}
	b := builder()
	for _, tt := range tests {
		var got args
		r := b.DecodeArgs(tool.Call{Args: json.RawMessage(tt.raw), Caller: tool.Caller{Language: "en"}}, &got)
		switch {
		case tt.wantErr == "" && r != nil:
			t.Errorf("DecodeArgs(%q) = %+v, want success", tt.raw, *r)
		case tt.wantErr == "" && (got.Title != tt.want.Title || got.Due != nil):
			t.Errorf("DecodeArgs(%q) decoded %+v, want %+v", tt.raw, got, tt.want)
		case tt.wantErr != "" && r == nil:
			t.Errorf("DecodeArgs(%q) succeeded, want %q", tt.raw, tt.wantErr)
		case tt.wantErr != "" && (r.Status != tool.StatusError || !strings.Contains(r.Error, tt.wantErr) ||
			!strings.HasPrefix(r.Error, "invalid arguments: ") || r.Text != "Invalid action arguments."):
			t.Errorf("DecodeArgs(%q) = %+v, want an error holding %q", tt.raw, *r, tt.wantErr)
		}
	}
}

// strictArgs refuses arguments without a title: its own decoding runs even
// for {}.
type strictArgs struct{ Title string }

func (a *strictArgs) UnmarshalJSON(b []byte) error {
	var w struct {
		Title *string `json:"title"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Title == nil {
		return errors.New("title is required")
	}
	a.Title = *w.Title
	return nil
}

// Empty arguments decode as {} into whatever the tool asks for, as
// encoding/json would: a type's own decoding still runs, a map is made.
func TestDecodeArgsEmptyObject(t *testing.T) {
	b := builder()
	var strict strictArgs
	if r := b.DecodeArgs(tool.Call{Args: json.RawMessage(`{}`)}, &strict); r == nil || !strings.Contains(r.Error, "title is required") {
		t.Errorf("a self-decoding type got {} decoded as %+v", r)
	}
	var m map[string]any
	if r := b.DecodeArgs(tool.Call{Args: json.RawMessage(` {} `)}, &m); r != nil || m == nil || len(m) != 0 {
		t.Errorf("a map: %+v, %v", r, m)
	}
	got := struct{ Title string }{Title: "kept"}
	if r := b.DecodeArgs(tool.Call{}, &got); r != nil || got.Title != "kept" {
		t.Errorf("a struct: %+v, %+v", r, got)
	}
}

func TestCheckFields(t *testing.T) {
	b := builder()
	tests := []struct {
		name      string
		limits    []Limit
		wantField string // "" when all fit
		wantText  string
	}{
		{"none", nil, "", ""},
		{"fits in characters, not bytes", []Limit{MaxLen("title", "Ёжик", 4)}, "", ""},
		{"too long", []Limit{MaxLen("title", "Отчёт", 4)}, "title", "Поле title слишком длинное (5 символов, максимум 4)."},
		{"first too long wins", []Limit{MaxLen("a", "ok", 2), MaxLen("b", "long", 3), MaxLen("c", "longer", 3)},
			"b", "Поле b слишком длинное (4 символов, максимум 3)."},
	}
	for _, tt := range tests {
		r := b.CheckFields(tool.Caller{Language: "ru"}, tt.limits...)
		if tt.wantField == "" {
			if r != nil {
				t.Errorf("%s: CheckFields = %+v, want nil", tt.name, *r)
			}
			continue
		}
		if r == nil || r.Status != tool.StatusError || r.Field != tt.wantField || r.Text != tt.wantText {
			t.Errorf("%s: CheckFields = %+v, want field %s, text %q", tt.name, r, tt.wantField, tt.wantText)
		}
	}
	r := b.CheckLen(tool.Caller{Language: "en"}, "text", strings.Repeat("я", 11), 10)
	if r == nil || r.Error != "text is 11 characters, more than the limit of 10" || r.Text != "The text is too long (11 characters, at most 10)." {
		t.Errorf("CheckLen = %+v", r)
	}
}

func TestOpt(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		in   *string
		want string
	}{
		{nil, ""},
		{s(""), ""},
		{s("  \t"), ""},
		{s(" В работе "), "В работе"},
	}
	for _, tt := range tests {
		if got := Opt(tt.in); got != tt.want {
			t.Errorf("Opt = %q, want %q", got, tt.want)
		}
	}
}

func TestCheckLimit(t *testing.T) {
	n := func(v int) *int { return &v }
	tests := []struct {
		in       *int
		want     int
		wantText string // "" for no failure
	}{
		{nil, 5, ""},
		{n(1), 1, ""},
		{n(20), 20, ""},
		{n(0), 0, "Лимит должен быть от 1 до 20."},
		{n(21), 0, "Лимит должен быть от 1 до 20."},
		{n(-3), 0, "Лимит должен быть от 1 до 20."},
	}
	b := builder()
	for _, tt := range tests {
		got, r := b.CheckLimit(tool.Caller{Language: "ru"}, tt.in, 5, 20)
		switch {
		case tt.wantText == "" && (r != nil || got != tt.want):
			t.Errorf("CheckLimit(%v) = %d, %+v; want %d", tt.in, got, r, tt.want)
		case tt.wantText != "" && (r == nil || r.Field != "limit" || r.Status != tool.StatusError || r.Text != tt.wantText):
			t.Errorf("CheckLimit(%v) = %d, %+v; want the failure %q", tt.in, got, r, tt.wantText)
		}
	}
	if _, r := b.CheckLimit(tool.Caller{Language: "en"}, n(50), 5, 20); r == nil ||
		r.Error != "limit 50 is outside 1..20" || r.Text != "The limit must be 1 to 20." {
		t.Errorf("CheckLimit(50) = %+v", r)
	}
}
