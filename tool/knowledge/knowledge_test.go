package knowledge

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/sqlitetest"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

var testNow = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

func newBase(t *testing.T) *Base {
	t.Helper()
	b, err := New(Config{DB: sqlitetest.Open(t, sqlitetest.WAL), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

var (
	dmitry = tooltest.Dmitry
	olga   = tool.Caller{TenantID: "acme", UserID: "u3", Name: "Olga Smirnova", Language: "en"}
	hank   = tooltest.Hank
)

func toolByName(t *testing.T, b *Base, name string) tool.Tool {
	return tooltest.Named(t, b.Tools(), name)
}

func run(t *testing.T, b *Base, name string, c tool.Caller, key, args string) tool.Result {
	t.Helper()
	return tooltest.MustCall(t, toolByName(t, b, name), c, key, args, testNow)
}

func mustAdd(t *testing.T, b *Base, c tool.Caller, key, args string) tool.Result {
	t.Helper()
	res := run(t, b, ActionAdd, c, key, args)
	if res.Status != tool.StatusOK {
		t.Fatalf("add %s: %s %s %s", args, res.Status, res.Error, res.Text)
	}
	return res
}

type searchData struct {
	Query   string      `json:"query"`
	Match   string      `json:"match"`
	Results []entryView `json:"results"`
}

func search(t *testing.T, b *Base, c tool.Caller, query string, limit int) (tool.Result, searchData) {
	t.Helper()
	args := map[string]any{"query": query}
	if limit > 0 {
		args["limit"] = limit
	}
	raw, _ := json.Marshal(args)
	res := run(t, b, ActionSearch, c, "", string(raw))
	var d searchData
	if res.Status == tool.StatusOK {
		if err := json.Unmarshal(res.Data, &d); err != nil {
			t.Fatalf("decode search data: %v", err)
		}
	}
	return res, d
}

func titles(d searchData) []string {
	out := make([]string, len(d.Results))
	for i, r := range d.Results {
		out[i] = r.Title
	}
	return out
}

func entries(t *testing.T, b *Base, tenant string) []Entry {
	t.Helper()
	es, err := b.Entries(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	return es
}

func TestAddStoresEntry(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	res := mustAdd(t, b, dmitry, "k1", `{"title":"  Тарифы   2027 ","text":"Базовый тариф — 990 ₽ в месяц.\nПро — 2490 ₽.",
		"source":"https://t.me/acme_news/42","tags":["тарифы","Цены","тарифы",""]}`)
	if !strings.Contains(res.Text, "Тарифы 2027") || !strings.Contains(res.Text, "https://t.me/acme_news/42") {
		t.Errorf("text %q", res.Text)
	}
	mustAdd(t, b, olga, "", `{"title":"Office wifi","text":"Network acme-guest, password in the wiki.","source":null,"tags":null}`)

	es := entries(t, b, "acme")
	if len(es) != 2 {
		t.Fatalf("%d entries, want 2", len(es))
	}
	e := es[0]
	if e.Title != "Тарифы 2027" || e.Text != "Базовый тариф — 990 ₽ в месяц.\nПро — 2490 ₽." ||
		e.Source != "https://t.me/acme_news/42" || e.AuthorID != "u1" || e.AuthorName != "Дмитрий Иванов" ||
		!e.CreatedAt.Equal(testNow) || strings.Join(e.Tags, ",") != "тарифы,Цены" {
		t.Errorf("stored %+v", e)
	}
	if e.Origin() != "https://t.me/acme_news/42" {
		t.Errorf("origin %q", e.Origin())
	}
	if es[1].Source != "" || es[1].Origin() != "Olga Smirnova" || len(es[1].Tags) != 0 {
		t.Errorf("caller as source: %+v", es[1])
	}
	var d struct {
		Entry entryView `json:"entry"`
	}
	if err := json.Unmarshal(res.Data, &d); err != nil || d.Entry.ID != e.ID || d.Entry.Source != e.Source ||
		d.Entry.AddedBy != "Дмитрий Иванов" || d.Entry.CreatedAt != "2026-11-20T09:30:00Z" {
		t.Errorf("data %s (%v)", res.Data, err)
	}
	if len(entries(t, b, "globex")) != 0 {
		t.Error("globex sees acme entries")
	}
}

func TestAddRejectsBadArguments(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	tags := make([]string, maxTags+1)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	manyTags, _ := json.Marshal(map[string]any{"title": "x", "text": "y", "tags": tags})
	for _, args := range []string{
		`{"title":"   ","text":"y"}`,
		`{"title":"x","text":"\u0001 \n "}`,
		`{"title":"x","text":"y","author":"boss"}`,
		`{"title":"x"}{}`,
		`{"title":"` + strings.Repeat("я", maxTitle+1) + `","text":"y"}`,
		`{"title":"x","text":"y","tags":["` + strings.Repeat("t", maxTag+1) + `"]}`,
		string(manyTags),
	} {
		res := run(t, b, ActionAdd, dmitry, "", args)
		if res.Status != tool.StatusError || res.Text == "" {
			t.Errorf("%.60s: %s %q", args, res.Status, res.Text)
		}
	}
	if n := len(entries(t, b, "acme")); n != 0 {
		t.Errorf("%d entries stored from bad arguments", n)
	}
	if _, err := toolByName(t, b, ActionAdd).Call(context.Background(), tool.Call{Caller: tool.Caller{UserID: "u1"}, Args: json.RawMessage(`{"title":"x","text":"y"}`)}); err == nil {
		t.Error("a call without tenant ran")
	}
}

func TestSearchRussianDeclension(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	mustAdd(t, b, dmitry, "", `{"title":"Встреча с клиентом Ромашка","text":"На встрече договорились о пилоте на три месяца."}`)
	mustAdd(t, b, dmitry, "", `{"title":"Регламент","text":"Перед каждой встречей отправляем повестку клиенту."}`)
	mustAdd(t, b, dmitry, "", `{"title":"Отпуск","text":"Заявление на отпуск подаётся за две недели."}`)

	for _, q := range []string{"встреча", "встречи", "встречу", "встречей", "встречах", "ВСТРЕЧА"} {
		res, d := search(t, b, dmitry, q, 0)
		if res.Status != tool.StatusOK || len(d.Results) != 2 {
			t.Errorf("%q: %s %v", q, res.Status, titles(d))
			continue
		}
		if d.Results[0].Title != "Встреча с клиентом Ромашка" {
			t.Errorf("%q: the title match should rank first: %v", q, titles(d))
		}
	}
	res, d := search(t, b, dmitry, "клиента", 0)
	if res.Status != tool.StatusOK || len(d.Results) != 2 {
		t.Errorf("клиента: %s %v", res.Status, titles(d))
	}
	_, d = search(t, b, dmitry, "заявления на отпуске", 0)
	if len(d.Results) != 1 || d.Results[0].Title != "Отпуск" || d.Match != "all" {
		t.Errorf("заявления на отпуске: %+v", d)
	}
	if !strings.Contains(d.Results[0].Snippet, "**Заявление**") || !strings.Contains(d.Results[0].Snippet, "**отпуск**") {
		t.Errorf("snippet %q", d.Results[0].Snippet)
	}
	if res, _ := search(t, b, dmitry, "командировка", 0); res.Status != tool.StatusNotFound || res.Text == "" {
		t.Errorf("no match: %s %q", res.Status, res.Text)
	}
}

func TestSearchFoldsYo(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	mustAdd(t, b, dmitry, "", `{"title":"Ёлка","text":"Ещё раз: ёлку ставим в холле, а в переговорной — нет."}`)
	mustAdd(t, b, dmitry, "", `{"title":"Елена","text":"Еще один контакт."}`)
	res, d := search(t, b, dmitry, "елку", 0)
	if res.Status != tool.StatusOK || len(d.Results) != 1 || d.Results[0].Title != "Ёлка" {
		t.Fatalf("елку: %s %v", res.Status, titles(d))
	}
	if s := d.Results[0].Snippet; !strings.Contains(s, "**ёлку**") || !strings.Contains(s, "Ещё") {
		t.Errorf("snippet %q should show the stored letters", s)
	}
	if _, d := search(t, b, dmitry, "ещё", 0); len(d.Results) != 2 {
		t.Errorf("ещё: %v", titles(d))
	}
}

func TestSearchEnglish(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	mustAdd(t, b, olga, "", `{"title":"Quarterly planning meeting","text":"We planned the launch of two companies' accounts.","tags":["planning"]}`)
	mustAdd(t, b, olga, "", `{"title":"Café list","text":"The naïve café on Main street has fast wifi."}`)
	mustAdd(t, b, olga, "", `{"title":"Security","text":"Passwords rotate every 90 days."}`)
	for q, want := range map[string]string{
		"meetings":           "Quarterly planning meeting",
		"meeting":            "Quarterly planning meeting",
		"company":            "Quarterly planning meeting",
		"plans":              "Quarterly planning meeting",
		"cafe naive":         "Café list",
		"password":           "Security",
		"ROTATING passwords": "Security",
	} {
		res, d := search(t, b, olga, q, 0)
		if res.Status != tool.StatusOK || len(d.Results) != 1 || d.Results[0].Title != want {
			t.Errorf("%q: %s %v, want %s", q, res.Status, titles(d), want)
		}
	}
	res, d := search(t, b, olga, "wifi passwords", 0)
	if res.Status != tool.StatusOK || d.Match != "any" || len(d.Results) != 2 {
		t.Errorf("any-word fallback: %s %+v", res.Status, d)
	}
	if !strings.Contains(res.Text, "partial") {
		t.Errorf("fallback text %q", res.Text)
	}
	res, d = search(t, b, olga, "café", 0)
	if res.Status != tool.StatusOK || !strings.Contains(d.Results[0].Snippet, "**café**") {
		t.Errorf("snippet of café: %+v", d)
	}
	if !strings.HasPrefix(res.Text, "Found in the knowledge base (1):") || strings.Contains(res.Text, "**") {
		t.Errorf("text %q", res.Text)
	}
}

func TestSearchLimitAndOrder(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	for i := range 8 {
		mustAdd(t, b, dmitry, "", fmt.Sprintf(`{"title":"Заметка %d","text":"Отчёт по проекту номер %d."}`, i, i))
	}
	mustAdd(t, b, dmitry, "", `{"title":"Отчёт","text":"Отчёт, отчёты и ещё раз отчёты."}`)
	_, d := search(t, b, dmitry, "отчеты", 0)
	if len(d.Results) != defaultLimit || d.Results[0].Title != "Отчёт" {
		t.Errorf("default limit: %v", titles(d))
	}
	_, d = search(t, b, dmitry, "отчет", 3)
	if len(d.Results) != 3 {
		t.Errorf("limit 3: %v", titles(d))
	}
	if res := run(t, b, ActionSearch, dmitry, "", `{"query":"отчет","limit":0}`); res.Status != tool.StatusError || res.Field != "limit" {
		t.Errorf("limit 0: %s", res.Status)
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	mustAdd(t, b, dmitry, "shared-key", `{"title":"Secret pricing","text":"Acme discount is 40 percent.","source":"https://acme.example/p"}`)
	// The same key in another tenant is another action.
	hankFirst := mustAdd(t, b, hank, "shared-key", `{"title":"Secret pricing","text":"Globex discount is 10 percent."}`)
	mustAdd(t, b, hank, "", `{"title":"Doomsday device","text":"Prototype ready."}`)

	for _, c := range []tool.Caller{dmitry, olga} {
		for _, q := range []string{"secret pricing", "discount", "Globex", "doomsday", "prototype ready"} {
			_, d := search(t, b, c, q, maxLimit)
			for _, r := range d.Results {
				if strings.Contains(r.Snippet, "Globex") || r.Title == "Doomsday device" {
					t.Errorf("acme search %q returned globex entry %+v", q, r)
				}
			}
		}
	}
	_, d := search(t, b, hank, "discount percent", maxLimit)
	if len(d.Results) != 1 || !strings.Contains(d.Results[0].Snippet, "Globex") {
		t.Errorf("globex search: %+v", d)
	}
	if _, d := search(t, b, hank, "acme", maxLimit); len(d.Results) != 0 {
		t.Errorf("globex finds acme: %+v", d)
	}
	if len(entries(t, b, "acme")) != 1 || len(entries(t, b, "globex")) != 2 {
		t.Errorf("entries: acme %d globex %d", len(entries(t, b, "acme")), len(entries(t, b, "globex")))
	}
	// Replaying the shared key as globex returns globex's own result.
	res := run(t, b, ActionAdd, hank, "shared-key", `{"title":"anything","text":"else"}`)
	if string(res.Data) != string(hankFirst.Data) || strings.Contains(string(res.Data), "acme.example") {
		t.Errorf("globex replay: %s, want %s", res.Data, hankFirst.Data)
	}
}

func TestSearchInjectionIsInert(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	mustAdd(t, b, dmitry, "", `{"title":"Встреча с клиентом","text":"Обсудили NEAR-term план и бюджет (черновик)."}`)
	mustAdd(t, b, olga, "", `{"title":"Budget","text":"Budget draft for Q3, not final."}`)

	found := []string{
		`"встреча`, `встреча"`, `"встреча"`, `""встреча""`, `встреча*`, `*встреча`, `-встреча`,
		`встреча -клиент`, `встреча NOT клиент`, `NOT встреча`, `NEAR(встреча клиент)`, `NEAR(встреча клиент, 0)`,
		`встреча NEAR клиент`, `(встреча`, `встреча)`, `((встреча) OR (`, `title:встреча`, `body:встреча`,
		`{title body}: встреча`, `- {tags}: встреча`, `^встреча`, `встреча + клиент`, `встреча AND`, `OR встреча`,
		`встреча; DROP TABLE knowledge_entries; --`, `встреча' OR '1'='1`, "встреча\x00", `встреча \" клиент`,
		`budget NOT final`, `budget -draft`, `"budget" "draft"`, `budget:*`, `rowid:1 budget`, `knowledge_fts:budget`, `NEAR(`,
	}
	for _, q := range found {
		res, d := search(t, b, dmitry, q, 0)
		if res.Status != tool.StatusOK || len(d.Results) == 0 {
			t.Errorf("%q: %s %s %s", q, res.Status, res.Error, res.Text)
		}
	}
	nothing := []string{`*`, `"`, `""`, `()`, `-`, `^`, `:`, `{}`, `"*"`, `'`, `\`, `+*-"^:()`, "\u00a0", `😀`}
	for _, q := range nothing {
		res, _ := search(t, b, dmitry, q, 0)
		if res.Status != tool.StatusNotFound {
			t.Errorf("%q: %s %s", q, res.Status, res.Error)
		}
	}
	// Random mixes of operator characters and words never break the query.
	rng := rand.New(rand.NewSource(1))
	parts := []string{`"`, `*`, `(`, `)`, `-`, `+`, `^`, `:`, `{`, `}`, ` `, `NEAR`, `AND`, `OR`, `NOT`, `встреча`, `budget`, `,`, `'`, `\`, "ё", "𞤀", "é"}
	for range 60 {
		var q strings.Builder
		for range 1 + rng.Intn(12) {
			q.WriteString(parts[rng.Intn(len(parts))])
		}
		if res, _ := search(t, b, dmitry, q.String(), 0); res.Status == tool.StatusError {
			t.Fatalf("%q: %s", q.String(), res.Error)
		}
	}
	if len(entries(t, b, "acme")) != 2 {
		t.Error("entries changed by searches")
	}
}

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	first := mustAdd(t, b, dmitry, "key-1", `{"title":"Пароль от Wi-Fi","text":"acme-guest / spring2026"}`)
	again := run(t, b, ActionAdd, dmitry, "key-1", `{"title":"Пароль от Wi-Fi","text":"acme-guest / spring2026"}`)
	other := run(t, b, ActionAdd, dmitry, "key-1", `{"title":"Другое","text":"совсем другое"}`)
	for _, r := range []tool.Result{again, other} {
		if r.Status != tool.StatusOK || string(r.Data) != string(first.Data) || r.Text != first.Text {
			t.Errorf("replay: %s %s, want %s", r.Status, r.Data, first.Data)
		}
	}
	if es := entries(t, b, "acme"); len(es) != 1 {
		t.Fatalf("%d entries after replays, want 1", len(es))
	}
	if _, d := search(t, b, dmitry, "wi-fi пароль", 0); len(d.Results) != 1 {
		t.Errorf("index holds %d copies", len(d.Results))
	}
	if _, d := search(t, b, dmitry, "другое", 0); len(d.Results) != 0 {
		t.Errorf("the replayed arguments were indexed: %v", titles(d))
	}
}

func TestConcurrentAdds(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	var wg sync.WaitGroup
	results := make([]tool.Result, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "same"
			if i%2 == 1 {
				key = fmt.Sprintf("k%d", i)
			}
			res, err := toolByName(t, b, ActionAdd).Call(context.Background(), tool.Call{Caller: dmitry, IdempotencyKey: key,
				Args: json.RawMessage(fmt.Sprintf(`{"title":"Заметка %d","text":"Параллельная запись"}`, i))})
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			search(t, b, dmitry, "параллельная запись", 0)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Status != tool.StatusOK {
			t.Errorf("call %d: %s %s", i, r.Status, r.Error)
		}
	}
	if n := len(entries(t, b, "acme")); n != 9 {
		t.Errorf("%d entries, want 9 (one for the shared key, eight distinct)", n)
	}
}

func TestConfirmPolicy(t *testing.T) {
	t.Parallel()
	db := sqlitetest.Open(t, sqlitetest.WAL)
	b, err := New(Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range b.Tools() {
		s := tl.Spec()
		if s.Confirm != tool.ConfirmNever {
			t.Errorf("%s confirm %s", s.Name, s.Confirm)
		}
		if (s.Name == ActionAdd) != (s.Risk == tool.RiskWriteSafe) || s.Idempotent != s.Risk.Writes() {
			t.Errorf("%s risk %s idempotent %v", s.Name, s.Risk, s.Idempotent)
		}
	}
	b, err = New(Config{DB: db, Confirm: map[string]tool.Confirm{ActionAdd: tool.ConfirmAlways}})
	if err != nil {
		t.Fatal(err)
	}
	if c := toolByName(t, b, ActionAdd).Spec().Confirm; c != tool.ConfirmAlways {
		t.Errorf("override: %s", c)
	}
	for _, cfg := range []Config{
		{},
		{DB: db, Confirm: map[string]tool.Confirm{"drop_knowledge": tool.ConfirmAlways}},
		{DB: db, Confirm: map[string]tool.Confirm{ActionAdd: "sometimes"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

func TestTimeoutIsError(t *testing.T) {
	t.Parallel()
	b := newBase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := toolByName(t, b, ActionSearch).Call(ctx, tool.Call{Caller: dmitry, Args: json.RawMessage(`{"query":"встреча"}`)})
	if err != nil || res.Status != tool.StatusError {
		t.Errorf("cancelled search: %s %v", res.Status, err)
	}
	res, err = toolByName(t, b, ActionAdd).Call(ctx, tool.Call{Caller: dmitry, Args: json.RawMessage(`{"title":"x","text":"y"}`)})
	if err != nil || res.Status != tool.StatusError {
		t.Errorf("cancelled add: %s %v", res.Status, err)
	}
}
