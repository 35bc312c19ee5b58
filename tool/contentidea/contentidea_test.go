package contentidea

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

var testNow = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

var dmitry, olga, hank = tooltest.Dmitry, tooltest.Olga, tooltest.Hank

func newStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	if cfg.DB == nil {
		cfg.DB = sqlitetest.Open(t, sqlitetest.WAL)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func toolByName(t *testing.T, s *Store, name string) tool.Tool {
	return tooltest.Named(t, s.Tools(), name)
}

func run(t *testing.T, s *Store, name string, c tool.Caller, key, args string) tool.Result {
	t.Helper()
	return tooltest.MustCall(t, toolByName(t, s, name), c, key, args, testNow)
}

func ideas(t *testing.T, s *Store, tenant string) []Idea {
	t.Helper()
	out, err := s.Ideas(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Ideas: %v", err)
	}
	return out
}

func TestMissingPlatformIsAmbiguous(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	for _, args := range []string{
		`{"idea":"Разбор кейса: как ассистент выбирает действие","format":"пост","notes":"с картинкой"}`,
		`{"idea":"Разбор кейса: как ассистент выбирает действие","platform":null,"format":"пост","notes":"с картинкой"}`,
		`{"idea":"Разбор кейса: как ассистент выбирает действие","platform":"  ","format":"пост","notes":"с картинкой"}`,
	} {
		res := run(t, s, ActionIdea, dmitry, "k-draft", args)
		if res.Status != tool.StatusAmbiguous || res.Field != "platform" || !slices.Equal(res.Candidates, DefaultPlatforms) {
			t.Fatalf("%s: %s field %q candidates %v", args, res.Status, res.Field, res.Candidates)
		}
		if !strings.Contains(res.Text, "Для какой площадки") || !strings.Contains(res.Text, "telegram, instagram, youtube, blog") {
			t.Errorf("text %q", res.Text)
		}
		var d struct {
			Draft draft `json:"draft"`
		}
		if err := json.Unmarshal(res.Data, &d); err != nil || d.Draft.Idea != "Разбор кейса: как ассистент выбирает действие" ||
			d.Draft.Format != "пост" || d.Draft.Notes != "с картинкой" {
			t.Errorf("draft %s (%v)", res.Data, err)
		}
	}
	if n := len(ideas(t, s, "acme")); n != 0 {
		t.Fatalf("%d ideas stored without a platform", n)
	}
	// The key was not used up: the re-proposal with the chosen platform,
	// here under the same key, saves the idea.
	res := run(t, s, ActionIdea, dmitry, "k-draft", `{"idea":"Разбор кейса: как ассистент выбирает действие","platform":"telegram","format":"пост","notes":"с картинкой"}`)
	if res.Status != tool.StatusOK {
		t.Fatalf("with platform: %s %s", res.Status, res.Error)
	}
	if n := len(ideas(t, s, "acme")); n != 1 {
		t.Fatalf("%d ideas, want 1", n)
	}
}

func TestUnknownPlatformIsAmbiguous(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	res := run(t, s, ActionIdea, olga, "", `{"idea":"Behind the scenes","platform":"tiktok"}`)
	if res.Status != tool.StatusAmbiguous || res.Field != "platform" || !slices.Equal(res.Candidates, DefaultPlatforms) {
		t.Fatalf("%s field %q candidates %v", res.Status, res.Field, res.Candidates)
	}
	if !strings.Contains(res.Text, `"tiktok" is not one of the platforms`) || !strings.Contains(res.Error, "tiktok") {
		t.Errorf("text %q error %q", res.Text, res.Error)
	}
	// A partial name is not guessed.
	if res := run(t, s, ActionIdea, olga, "", `{"idea":"x","platform":"tele"}`); res.Status != tool.StatusAmbiguous {
		t.Errorf("partial name: %s", res.Status)
	}
	if n := len(ideas(t, s, "acme")); n != 0 {
		t.Fatalf("%d ideas stored for an unknown platform", n)
	}
}

func TestSaveWithPlatform(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	res := run(t, s, ActionIdea, dmitry, "k1", `{"idea":"  Как ИИ-ассистент выбирает действие\n\nдва этапа ","platform":"Telegram","format":" длинный   пост ","notes":"сослаться на разбор"}`)
	if res.Status != tool.StatusOK {
		t.Fatalf("%s %s", res.Status, res.Error)
	}
	got := ideas(t, s, "acme")
	if len(got) != 1 {
		t.Fatalf("%d ideas, want 1", len(got))
	}
	i := got[0]
	if i.Tenant != "acme" || i.Idea != "Как ИИ-ассистент выбирает действие\n\nдва этапа" || i.Platform != "telegram" ||
		i.Format != "длинный пост" || i.Notes != "сослаться на разбор" || i.AuthorID != "u1" ||
		i.AuthorName != "Дмитрий Иванов" || !i.CreatedAt.Equal(testNow) {
		t.Errorf("stored %+v", i)
	}
	var d struct {
		Idea ideaView `json:"idea"`
	}
	if err := json.Unmarshal(res.Data, &d); err != nil || d.Idea.ID != i.ID || d.Idea.Platform != "telegram" ||
		d.Idea.Author != "Дмитрий Иванов" || d.Idea.CreatedAt != "2026-11-20T09:30:00Z" {
		t.Errorf("data %s (%v)", res.Data, err)
	}
	if !strings.HasPrefix(res.Text, "Идея сохранена (telegram, длинный пост)") {
		t.Errorf("text %q", res.Text)
	}

	for given, want := range map[string]string{
		"телеграм": "telegram", "ТГ": "telegram", "Insta": "instagram", "YouTube": "youtube",
		"You Tube": "youtube", "ютуб": "youtube", "Блог": "blog", "blog.": "blog",
	} {
		res := run(t, s, ActionIdea, olga, "", fmt.Sprintf(`{"idea":"idea for %s","platform":%q}`, given, given))
		var d struct {
			Idea ideaView `json:"idea"`
		}
		_ = json.Unmarshal(res.Data, &d)
		if res.Status != tool.StatusOK || d.Idea.Platform != want {
			t.Errorf("%q: %s %q, want %s", given, res.Status, d.Idea.Platform, want)
		}
	}
	if n := len(ideas(t, s, "acme")); n != 9 {
		t.Errorf("%d ideas, want 9", n)
	}
}

func TestConfiguredPlatforms(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{Platforms: []string{"VK", " Дзен ", "telegram"}})
	if got := s.Platforms(); !slices.Equal(got, []string{"VK", "Дзен", "telegram"}) {
		t.Fatalf("platforms %v", got)
	}
	res := run(t, s, ActionIdea, dmitry, "", `{"idea":"Подкаст"}`)
	if res.Status != tool.StatusAmbiguous || !slices.Equal(res.Candidates, []string{"VK", "Дзен", "telegram"}) {
		t.Fatalf("%s %v", res.Status, res.Candidates)
	}
	for _, p := range []string{"youtube", "ютуб", "blog"} {
		if res := run(t, s, ActionIdea, dmitry, "", `{"idea":"Подкаст","platform":"`+p+`"}`); res.Status != tool.StatusAmbiguous {
			t.Errorf("%s is not configured but got %s", p, res.Status)
		}
	}
	for given, want := range map[string]string{"vk": "VK", "дзен": "Дзен", "тг": "telegram"} {
		if p, ok := s.Platform(given); !ok || p != want {
			t.Errorf("Platform(%q) = %q %v, want %s", given, p, ok, want)
		}
	}
	if !strings.Contains(toolByName(t, s, ActionIdea).Spec().Description, "VK, Дзен, telegram") {
		t.Error("description does not list the configured platforms")
	}
	for _, bad := range [][]string{{"vk", "VK"}, {"telegram", "Telegram!"}, {"---"}, {strings.Repeat("p", maxPlatformBytes+1)}} {
		if _, err := New(Config{DB: sqlitetest.Open(t, sqlitetest.WAL), Platforms: bad}); err == nil {
			t.Errorf("New accepted platforms %q", bad)
		}
	}
}

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	first := run(t, s, ActionIdea, dmitry, "key-1", `{"idea":"Чек-лист запуска","platform":"blog"}`)
	if first.Status != tool.StatusOK {
		t.Fatalf("%s %s", first.Status, first.Error)
	}
	for _, args := range []string{
		`{"idea":"Чек-лист запуска","platform":"blog"}`,
		`{"idea":"Другое","platform":"youtube"}`,
		`{"idea":"Другое"}`,
	} {
		r := run(t, s, ActionIdea, dmitry, "key-1", args)
		if r.Status != tool.StatusOK || string(r.Data) != string(first.Data) || r.Text != first.Text {
			t.Errorf("replay %s: %s %s, want %s", args, r.Status, r.Data, first.Data)
		}
	}
	if got := ideas(t, s, "acme"); len(got) != 1 || got[0].Platform != "blog" {
		t.Fatalf("ideas after replays: %+v", got)
	}
	// The same key in another tenant is another action.
	other := run(t, s, ActionIdea, hank, "key-1", `{"idea":"Doomsday teaser","platform":"youtube"}`)
	if other.Status != tool.StatusOK || string(other.Data) == string(first.Data) {
		t.Errorf("globex with acme's key: %s %s", other.Status, other.Data)
	}
	if len(ideas(t, s, "globex")) != 1 || len(ideas(t, s, "acme")) != 1 {
		t.Error("tenants share idempotency keys")
	}
}

func TestConcurrentSaves(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "same"
			if i%3 == 0 {
				key = fmt.Sprintf("k%d", i)
			}
			res, err := toolByName(t, s, ActionIdea).Call(context.Background(), tool.Call{Caller: dmitry, IdempotencyKey: key,
				Args: json.RawMessage(fmt.Sprintf(`{"idea":"Идея %d","platform":"instagram"}`, i))})
			if err != nil || res.Status != tool.StatusOK {
				t.Errorf("call %d: %v %s %s", i, err, res.Status, res.Error)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(t, s, ActionList, dmitry, "", `{}`)
		}()
	}
	wg.Wait()
	if n := len(ideas(t, s, "acme")); n != 5 {
		t.Errorf("%d ideas, want 5 (one for the shared key, four distinct)", n)
	}
}

type listData struct {
	Platform string     `json:"platform"`
	Ideas    []ideaView `json:"ideas"`
}

func list(t *testing.T, s *Store, c tool.Caller, args string) (tool.Result, listData) {
	t.Helper()
	res := run(t, s, ActionList, c, "", args)
	var d listData
	if res.Status == tool.StatusOK {
		if err := json.Unmarshal(res.Data, &d); err != nil {
			t.Fatalf("decode list: %v", err)
		}
	}
	return res, d
}

func TestList(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	if res, d := list(t, s, dmitry, `{}`); res.Status != tool.StatusOK || len(d.Ideas) != 0 || res.Text != "Контент-идей пока нет." {
		t.Errorf("empty: %s %q %+v", res.Status, res.Text, d)
	}
	for i, p := range []string{"telegram", "youtube", "telegram", "blog", "telegram"} {
		if res := run(t, s, ActionIdea, dmitry, "", fmt.Sprintf(`{"idea":"Идея %d","platform":%q,"format":"пост"}`, i, p)); res.Status != tool.StatusOK {
			t.Fatal(res.Error)
		}
	}
	run(t, s, ActionIdea, hank, "", `{"idea":"Globex secret launch","platform":"telegram"}`)

	res, d := list(t, s, dmitry, `{}`)
	if res.Status != tool.StatusOK || len(d.Ideas) != 5 || d.Ideas[0].Idea != "Идея 4" || d.Ideas[4].Idea != "Идея 0" {
		t.Fatalf("all: %s %+v", res.Status, d)
	}
	if !strings.Contains(res.Text, "1. [telegram, пост] Идея 4 — Дмитрий Иванов") {
		t.Errorf("text %q", res.Text)
	}
	_, d = list(t, s, olga, `{"platform":"Телеграм","limit":2}`)
	if d.Platform != "telegram" || len(d.Ideas) != 2 || d.Ideas[0].Idea != "Идея 4" || d.Ideas[1].Idea != "Идея 2" {
		t.Errorf("telegram limit 2: %+v", d)
	}
	for _, v := range d.Ideas {
		if strings.Contains(v.Idea, "Globex") {
			t.Error("acme sees globex ideas")
		}
	}
	_, d = list(t, s, hank, `{"platform":null,"limit":null}`)
	if len(d.Ideas) != 1 || d.Ideas[0].Idea != "Globex secret launch" {
		t.Errorf("globex: %+v", d)
	}
	res, _ = list(t, s, olga, `{"platform":"tiktok"}`)
	if res.Status != tool.StatusAmbiguous || res.Field != "platform" || !slices.Equal(res.Candidates, DefaultPlatforms) {
		t.Errorf("unknown platform: %s %v", res.Status, res.Candidates)
	}
	if res, _ := list(t, s, olga, `{"limit":0}`); res.Status != tool.StatusError || res.Field != "limit" {
		t.Errorf("limit 0: %s", res.Status)
	}
	if res, d := list(t, s, olga, `{"platform":"instagram"}`); res.Status != tool.StatusOK || len(d.Ideas) != 0 || res.Text != "No ideas for instagram yet." {
		t.Errorf("none for instagram: %s %q", res.Status, res.Text)
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	for _, args := range []string{
		`{"idea":"   "}`,
		`{"idea":"x","platform":"telegram","channel":"@acme"}`,
		`{"idea":"` + strings.Repeat("и", maxIdea+1) + `","platform":"telegram"}`,
		`{"idea":"x","platform":"telegram","notes":"` + strings.Repeat("и", maxNotes+1) + `"}`,
		`{"idea":"x","platform":"telegram"} {}`,
	} {
		if res := run(t, s, ActionIdea, dmitry, "", args); res.Status != tool.StatusError || res.Text == "" {
			t.Errorf("%.60s: %s", args, res.Status)
		}
	}
	if n := len(ideas(t, s, "acme")); n != 0 {
		t.Errorf("%d ideas from bad arguments", n)
	}
	if _, err := toolByName(t, s, ActionIdea).Call(context.Background(), tool.Call{Caller: tool.Caller{TenantID: "acme"}, Args: json.RawMessage(`{"idea":"x","platform":"blog"}`)}); err == nil {
		t.Error("a call without user ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := toolByName(t, s, ActionIdea).Call(ctx, tool.Call{Caller: dmitry, Args: json.RawMessage(`{"idea":"x","platform":"blog"}`)})
	if err != nil || res.Status != tool.StatusError {
		t.Errorf("cancelled: %s %v", res.Status, err)
	}
}

func TestConfirmPolicy(t *testing.T) {
	t.Parallel()
	s := newStore(t, Config{})
	idea, lst := toolByName(t, s, ActionIdea).Spec(), toolByName(t, s, ActionList).Spec()
	if idea.Confirm != tool.ConfirmAlways || idea.Risk != tool.RiskWriteSafe || !idea.Idempotent {
		t.Errorf("content_idea spec %+v", idea)
	}
	if lst.Confirm != tool.ConfirmNever || lst.Risk != tool.RiskRead || lst.Idempotent {
		t.Errorf("list spec %+v", lst)
	}
	s = newStore(t, Config{Confirm: map[string]tool.Confirm{ActionIdea: tool.ConfirmNever}})
	if c := toolByName(t, s, ActionIdea).Spec().Confirm; c != tool.ConfirmNever {
		t.Errorf("override: %s", c)
	}
	for _, cfg := range []Config{
		{},
		{DB: sqlitetest.Open(t, sqlitetest.WAL), Confirm: map[string]tool.Confirm{"publish_idea": tool.ConfirmAlways}},
		{DB: sqlitetest.Open(t, sqlitetest.WAL), Confirm: map[string]tool.Confirm{ActionIdea: "maybe"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}
