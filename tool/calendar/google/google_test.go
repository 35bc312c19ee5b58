package google

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/calendar"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

// fakeGoogle speaks the documented Google Calendar API JSON for the calls the
// backend makes: freeBusy.query, events.insert, events.get and
// events.list on the primary calendar, with Google's error bodies.
type fakeGoogle struct {
	mu       sync.Mutex
	events   map[string]map[string]any // by id, as stored
	busy     map[string][][2]string    // calendar id → busy periods
	calErr   map[string]string         // calendar id → free/busy error reason
	failures map[string][]fakeFailure  // route → failures to answer first
	requests []fakeRequest
}

type fakeFailure struct {
	status     int
	reason     string
	retryAfter string
	apply      bool // carry the request out, then fail the answer
}

type fakeRequest struct {
	Route, Method, Path, Auth string
	Query                     url.Values
	Body                      map[string]any
}

func newFakeGoogle(t *testing.T) (*fakeGoogle, *httptest.Server) {
	f := &fakeGoogle{events: map[string]map[string]any{}, busy: map[string][][2]string{},
		calErr: map[string]string{}, failures: map[string][]fakeFailure{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeGoogle) fail(route string, fl ...fakeFailure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[route] = append(f.failures[route], fl...)
}

func (f *fakeGoogle) log(route string) []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeRequest
	for _, r := range f.requests {
		if route == "" || r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// googleError writes Google's error body.
func googleError(w http.ResponseWriter, status int, reason, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"errors":  []map[string]any{{"domain": "global", "reason": reason, "message": message}},
		"code":    status,
		"message": message,
	}})
}

func (f *fakeGoogle) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const root = "/calendar/v3/"
	path := strings.TrimPrefix(r.URL.Path, root)
	var route string
	switch {
	case r.Method == http.MethodPost && path == "freeBusy":
		route = "freebusy"
	case r.Method == http.MethodPost && path == "calendars/primary/events":
		route = "insert"
	case r.Method == http.MethodGet && path == "calendars/primary/events":
		route = "list"
	case r.Method == http.MethodGet && strings.HasPrefix(path, "calendars/primary/events/"):
		route = "get"
	case strings.HasPrefix(path, "calendars/"):
		googleError(w, http.StatusNotFound, "notFound", "Not Found")
		return
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
		return
	}
	req := fakeRequest{Route: route, Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Query: r.URL.Query()}
	if raw, _ := io.ReadAll(r.Body); len(raw) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			googleError(w, http.StatusBadRequest, "parseError", "Parse Error")
			return
		}
	}
	f.requests = append(f.requests, req)
	if !strings.HasPrefix(req.Auth, "Bearer tok-") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/"`)
		googleError(w, http.StatusUnauthorized, "authError", "Invalid Credentials")
		return
	}
	var failure *fakeFailure
	if q := f.failures[route]; len(q) > 0 {
		failure, f.failures[route] = &q[0], q[1:]
		if !failure.apply {
			if failure.retryAfter != "" {
				w.Header().Set("Retry-After", failure.retryAfter)
			}
			googleError(w, failure.status, failure.reason, http.StatusText(failure.status))
			return
		}
	}
	status, body := f.handle(route, req, path)
	if failure != nil {
		googleError(w, failure.status, failure.reason, http.StatusText(failure.status))
		return
	}
	writeJSON(w, status, body)
}

func (f *fakeGoogle) handle(route string, req fakeRequest, path string) (int, any) {
	switch route {
	case "freebusy":
		cals := map[string]any{}
		items, _ := req.Body["items"].([]any)
		for _, it := range items {
			id := it.(map[string]any)["id"].(string)
			if reason := f.calErr[id]; reason != "" {
				cals[id] = map[string]any{"errors": []map[string]any{{"domain": "global", "reason": reason}}, "busy": []any{}}
				continue
			}
			busy := []map[string]string{}
			for _, p := range f.busy[id] {
				busy = append(busy, map[string]string{"start": p[0], "end": p[1]})
			}
			cals[id] = map[string]any{"busy": busy}
		}
		return http.StatusOK, map[string]any{"kind": "calendar#freeBusy", "timeMin": req.Body["timeMin"], "timeMax": req.Body["timeMax"], "calendars": cals}
	case "insert":
		id, _ := req.Body["id"].(string)
		if id == "" {
			id = fmt.Sprintf("gen%d", len(f.events))
		}
		if _, dup := f.events[id]; dup {
			return http.StatusConflict, map[string]any{"error": map[string]any{
				"errors": []map[string]any{{"domain": "global", "reason": "duplicate", "message": "The requested identifier already exists."}},
				"code":   409, "message": "The requested identifier already exists."}}
		}
		ev := map[string]any{}
		for k, v := range req.Body {
			ev[k] = v
		}
		ev["id"], ev["kind"], ev["status"] = id, "calendar#event", "confirmed"
		ev["htmlLink"] = "https://calendar.example/event?eid=" + id
		f.events[id] = ev
		return http.StatusOK, ev
	case "get":
		ev, ok := f.events[strings.TrimPrefix(path, "calendars/primary/events/")]
		if !ok {
			return http.StatusNotFound, map[string]any{"error": map[string]any{
				"errors": []map[string]any{{"domain": "global", "reason": "notFound", "message": "Not Found"}}, "code": 404, "message": "Not Found"}}
		}
		return http.StatusOK, ev
	}
	// list
	var items []map[string]any
	for _, ev := range f.events {
		start := ev["start"].(map[string]any)["dateTime"].(string)
		end := ev["end"].(map[string]any)["dateTime"].(string)
		if stampBefore(start, req.Query.Get("timeMax")) && stampBefore(req.Query.Get("timeMin"), end) {
			items = append(items, ev)
		}
	}
	sort.Slice(items, func(i, j int) bool {
		return stampBefore(items[i]["start"].(map[string]any)["dateTime"].(string), items[j]["start"].(map[string]any)["dateTime"].(string))
	})
	return http.StatusOK, map[string]any{"kind": "calendar#events", "items": items}
}

func stampBefore(a, b string) bool {
	ta, _ := time.Parse(time.RFC3339, a)
	tb, _ := time.Parse(time.RFC3339, b)
	return ta.Before(tb)
}

// newGoogleCalendar is the acme team on the fake; u2 has not connected.
func newGoogleCalendar(t *testing.T, srv *httptest.Server, tune func(*Config)) *calendar.Calendar {
	t.Helper()
	cfg := Config{
		Tokens: func(tenant, user string) (oauth2.TokenSource, bool) {
			if user == "u2" {
				return nil, false
			}
			return StaticToken("tok-" + tenant + "-" + user), true
		},
		BaseURL:    srv.URL + "/calendar/v3/",
		HTTPClient: srv.Client(),
		Backoff:    time.Millisecond,
		MaxBackoff: 5 * time.Millisecond,
	}
	if tune != nil {
		tune(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newCalendar(t, g)
}

func TestGoogleFreeBusy(t *testing.T) {
	f, srv := newFakeGoogle(t)
	f.busy["olga@acme.test"] = [][2]string{{"2026-12-02T08:00:00Z", "2026-12-02T09:00:00Z"}}
	f.busy["dmitry@acme.test"] = [][2]string{{"2026-12-02T11:00:00Z", "2026-12-02T11:30:00Z"}}
	c := newGoogleCalendar(t, srv, nil)
	res := run(t, c, calendar.ActionSchedule, dmitry, "", `{"title":"Планёрка","participants":["Ольга"],"durationMin":60,"earliestIso":"2026-12-02"}`)
	tooltest.WantStatus(t, res, tool.StatusAmbiguous)
	want := "ср 02.12 12:00–13:00 (Europe/Moscow)|ср 02.12 13:00–14:00 (Europe/Moscow)|ср 02.12 14:30–15:30 (Europe/Moscow)"
	if strings.Join(res.Candidates, "|") != want {
		t.Fatalf("candidates %q, want %q", res.Candidates, want)
	}
	reqs := f.log("")
	if len(reqs) != 1 || reqs[0].Route != "freebusy" {
		t.Fatalf("requests %+v", reqs)
	}
	r := reqs[0]
	if r.Auth != "Bearer tok-acme-u1" || r.Path != "/calendar/v3/freeBusy" || r.Query.Get("alt") != "json" {
		t.Errorf("request %+v", r)
	}
	body, _ := json.Marshal(r.Body)
	if string(body) != `{"items":[{"id":"dmitry@acme.test"},{"id":"olga@acme.test"}],"timeMax":"2026-12-08T21:00:00Z","timeMin":"2026-12-01T21:00:00Z","timeZone":"UTC"}` {
		t.Errorf("freeBusy body %s", body)
	}
}

func TestGoogleCreateEvent(t *testing.T) {
	f, srv := newFakeGoogle(t)
	c := newGoogleCalendar(t, srv, nil)
	args := `{"title":"Планёрка","startIso":"2026-12-02T10:00","durationMin":30,"participants":["Ольга"],"description":"Итоги"}`
	res := run(t, c, calendar.ActionCreateEvent, dmitry, "pending:7", args)
	tooltest.WantStatus(t, res, tool.StatusOK)
	id := googleEventID("acme", "u1", "pending:7")
	d := tooltest.Data[createdData](t, res)
	if d.Event.ID != id || d.Event.URL != "https://calendar.example/event?eid="+id || d.Event.StartUTC != "2026-12-02T07:00:00Z" ||
		!strings.Contains(res.Text, "https://calendar.example/event?eid="+id) {
		t.Fatalf("result %+v %q", d, res.Text)
	}
	if strings.Join(d.Event.Participants, "; ") != "Ольга Смирнова (08:00–08:30 Europe/Berlin)" {
		t.Errorf("participants %q", d.Event.Participants)
	}
	ins := f.log("insert")
	if len(ins) != 1 {
		t.Fatalf("%d inserts", len(ins))
	}
	r := ins[0]
	if r.Auth != "Bearer tok-acme-u1" || r.Path != "/calendar/v3/calendars/primary/events" || r.Query.Get("sendUpdates") != "all" {
		t.Errorf("insert request %+v", r)
	}
	body, _ := json.Marshal(r.Body)
	want := `{"attendees":[{"displayName":"Ольга Смирнова","email":"olga@acme.test"}],"description":"Итоги",` +
		`"end":{"dateTime":"2026-12-02T10:30:00+03:00","timeZone":"Europe/Moscow"},"id":"` + id + `",` +
		`"start":{"dateTime":"2026-12-02T10:00:00+03:00","timeZone":"Europe/Moscow"},"summary":"Планёрка"}`
	if string(body) != want {
		t.Errorf("insert body\n%s\nwant\n%s", body, want)
	}
	// The conflict check asked free/busy for exactly the event's span.
	if fb := f.log("freebusy"); len(fb) != 1 || fb[0].Body["timeMin"] != "2026-12-02T07:00:00Z" || fb[0].Body["timeMax"] != "2026-12-02T07:30:00Z" {
		t.Errorf("conflict check %+v", fb)
	}

	// The retried call names the same event; Google's 409 turns into the
	// first booking, and nothing is created twice.
	again := run(t, c, calendar.ActionCreateEvent, dmitry, "pending:7", args)
	tooltest.WantStatus(t, again, tool.StatusOK)
	if tooltest.Data[createdData](t, again).Event.ID != id || len(f.events) != 1 {
		t.Fatalf("repeat %+v; %d events", again, len(f.events))
	}
	if gets := f.log("get"); len(gets) != 1 || !strings.HasSuffix(gets[0].Path, "/events/"+id) {
		t.Errorf("repeat read %+v", gets)
	}
}

func TestGoogleRetries(t *testing.T) {
	f, srv := newFakeGoogle(t)
	c := newGoogleCalendar(t, srv, nil)
	args := `{"title":"Sync","startIso":"2026-12-02T10:00"}`

	// Rate limited twice (429, then 403 rateLimitExceeded), then served.
	f.fail("insert", fakeFailure{status: 429, reason: "rateLimitExceeded", retryAfter: "0"},
		fakeFailure{status: 403, reason: "userRateLimitExceeded"})
	res := run(t, c, calendar.ActionCreateEvent, dmitry, "r1", args)
	tooltest.WantStatus(t, res, tool.StatusOK)
	if n := len(f.log("insert")); n != 3 {
		t.Errorf("%d insert tries, want 3", n)
	}

	// The insert lands but its answer is lost (503): the retry meets 409
	// and answers from the event, so there is still one event for the key.
	f.fail("insert", fakeFailure{status: 503, reason: "backendError", apply: true})
	res = run(t, c, calendar.ActionCreateEvent, dmitry, "r2", args)
	tooltest.WantStatus(t, res, tool.StatusOK)
	if tooltest.Data[createdData](t, res).Event.ID != googleEventID("acme", "u1", "r2") || len(f.events) != 2 {
		t.Fatalf("after a lost answer: %+v, %d events", res, len(f.events))
	}

	// A rate limit that does not lift is an error after MaxAttempts tries.
	before := len(f.log("insert"))
	for range 6 {
		f.fail("insert", fakeFailure{status: 429, reason: "rateLimitExceeded"})
	}
	res = run(t, c, calendar.ActionCreateEvent, dmitry, "r3", args)
	tooltest.WantStatus(t, res, tool.StatusError)
	if n := len(f.log("insert")) - before; n != 4 {
		t.Errorf("%d tries under a lasting rate limit, want 4", n)
	}
	f.failures["insert"] = nil

	// A wait the deadline cannot afford is not started.
	slow := newGoogleCalendar(t, srv, func(cfg *Config) { cfg.MaxBackoff = time.Minute })
	f.fail("freebusy", fakeFailure{status: 429, reason: "rateLimitExceeded", retryAfter: "30"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	out, err := toolNamed(t, slow, calendar.ActionSchedule).Call(ctx, tool.Call{Caller: dmitry, Now: testNow,
		Args: json.RawMessage(`{"title":"Sync","participants":["Ольга"],"durationMin":30}`)})
	if err != nil || out.Status != tool.StatusError || time.Since(start) > time.Second {
		t.Fatalf("deadline: %+v, %v after %v", out, err, time.Since(start))
	}
}

func TestGoogleErrors(t *testing.T) {
	f, srv := newFakeGoogle(t)
	c := newGoogleCalendar(t, srv, nil)
	schedule := `{"title":"Sync","participants":["Ольга"],"durationMin":30}`

	// A participant's calendar Google does not know: not found.
	f.calErr["olga@acme.test"] = "notFound"
	res := run(t, c, calendar.ActionSchedule, dmitry, "", schedule)
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if !strings.Contains(res.Error, "Ольга Смирнова") {
		t.Errorf("not found should name the participant: %+v", res)
	}
	// Any other free/busy error of a calendar is an error.
	f.calErr["olga@acme.test"] = "internalError"
	tooltest.WantStatus(t, run(t, c, calendar.ActionSchedule, dmitry, "", schedule), tool.StatusError)
	delete(f.calErr, "olga@acme.test")

	// 404 from events.insert: not found, tried once.
	f.fail("insert", fakeFailure{status: 404, reason: "notFound"})
	before := len(f.log("insert"))
	res = run(t, c, calendar.ActionCreateEvent, dmitry, "e1", `{"title":"Sync","startIso":"2026-12-02T10:00"}`)
	tooltest.WantStatus(t, res, tool.StatusNotFound)
	if n := len(f.log("insert")) - before; n != 1 {
		t.Errorf("404 tried %d times", n)
	}

	// Refused credentials: an error, tried once.
	bad := newGoogleCalendar(t, srv, func(cfg *Config) {
		cfg.Tokens = func(string, string) (oauth2.TokenSource, bool) { return StaticToken("expired"), true }
	})
	before = len(f.log("freebusy"))
	res = run(t, bad, calendar.ActionSchedule, dmitry, "", schedule)
	tooltest.WantStatus(t, res, tool.StatusError)
	if !strings.Contains(res.Text, "отказал в доступе") || len(f.log("freebusy"))-before != 1 {
		t.Errorf("401: %+v after %d tries", res, len(f.log("freebusy"))-before)
	}

	// A caller who has not connected Google: an error, and no request.
	before = len(f.log(""))
	petrov := tool.Caller{TenantID: "acme", UserID: "u2", Language: "ru"}
	res = run(t, c, calendar.ActionSchedule, petrov, "", schedule)
	tooltest.WantStatus(t, res, tool.StatusError)
	if !strings.Contains(res.Text, "не подключён") || len(f.log("")) != before {
		t.Errorf("not connected: %+v", res)
	}
	secs, err := c.LiveContext(context.Background(), petrov, testNow)
	if err != nil || !strings.Contains(strings.Join(secs[0].Lines, ""), "not connected") {
		t.Errorf("context when not connected: %+v, %v", secs, err)
	}

	// A participant with no e-mail has no Google calendar to ask.
	res = run(t, c, calendar.ActionSchedule, dmitry, "", `{"title":"Sync","participants":["Анна Соколова (u6)"],"durationMin":30}`)
	tooltest.WantStatus(t, res, tool.StatusNotFound)

	// The backend's own error contract.
	g := c.Backend()
	_, err = g.Busy(context.Background(), "acme", calendar.Member{ID: "u2"}, nil, calendar.Interval{Start: testNow, End: testNow.Add(time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Errorf("Busy without a token: %v", err)
	}
}

func TestGoogleLiveContext(t *testing.T) {
	f, srv := newFakeGoogle(t)
	c := newGoogleCalendar(t, srv, nil)
	tooltest.WantStatus(t, run(t, c, calendar.ActionCreateEvent, dmitry, "a", `{"title":"Сегодня","startIso":"2026-12-01T15:00","participants":["Ольга"]}`), tool.StatusOK)
	tooltest.WantStatus(t, run(t, c, calendar.ActionCreateEvent, dmitry, "b", `{"title":"Потом","startIso":"2026-12-05T15:00"}`), tool.StatusOK)
	secs, err := c.LiveContext(context.Background(), dmitry, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(secs[0].Lines, "\n"); got != "вт 01.12 15:00–15:30 «Сегодня» (id "+googleEventID("acme", "u1", "a")+") — Ольга Смирнова" {
		t.Errorf("events %q", got)
	}
	lists := f.log("list")
	if len(lists) != 1 {
		t.Fatalf("%d list requests", len(lists))
	}
	q := lists[0].Query
	if q.Get("timeMin") != "2026-12-01T07:30:00Z" || q.Get("timeMax") != "2026-12-02T21:00:00Z" ||
		q.Get("singleEvents") != "true" || q.Get("orderBy") != "startTime" || lists[0].Auth != "Bearer tok-acme-u1" {
		t.Errorf("list query %v", q)
	}
	// A failing backend fails the context source.
	f.fail("list", fakeFailure{status: 400, reason: "badRequest"})
	if _, err := c.LiveContext(context.Background(), dmitry, testNow); err == nil {
		t.Error("a failed list gave no error")
	}
}

func TestNewGoogleValidates(t *testing.T) {
	tokens := func(string, string) (oauth2.TokenSource, bool) { return nil, false }
	for _, cfg := range []Config{
		{},
		{Tokens: tokens, SendUpdates: "everyone"},
		{Tokens: tokens, MaxAttempts: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := New(Config{Tokens: tokens, SendUpdates: "none"}); err != nil {
		t.Fatal(err)
	}
}

func TestEventIDs(t *testing.T) {
	id := googleEventID("acme", "u1", "pending:42")
	if len(id) < 5 || len(id) > 1024 || strings.Trim(id, "0123456789abcdefghijklmnopqrstuv") != "" {
		t.Fatalf("event id %q is not base32hex of length 5..1024", id)
	}
	if id != googleEventID("acme", "u1", "pending:42") {
		t.Fatal("event id is not stable")
	}
	for _, other := range []string{googleEventID("acme", "u2", "pending:42"), googleEventID("globex", "u1", "pending:42"), googleEventID("acme", "u1", "pending:43")} {
		if other == id {
			t.Fatalf("different bookings share id %s", id)
		}
	}
}
