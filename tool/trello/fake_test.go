package trello

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/tooltest"
)

// fakeTrello is a loopback stand-in for the Trello REST API: it keeps one
// board's lists, members, cards, comments and attachments and answers
// with the documented payload shapes — objects trimmed to the requested
// fields, plain-text error bodies ("invalid id", "invalid token",
// "unauthorized card permission requested"), JSON rate-limit bodies.
type fakeTrello struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	key         string
	tokens      map[string]string // token -> acting member id
	board       fakeBoard
	lists       []fakeList
	members     []apiMember
	cards       []*fakeCard
	comments    map[string][]map[string]any // card id -> actions, newest first
	attachments map[string][]map[string]any
	reqs        []fakeReq
	faults      []fault
	before      func(method, path string) // runs before each request is served
	seq         int                       // comments and attachments
	cardSeq     int
}

type fakeBoard struct{ ID, ShortLink, Name string }

type fakeList struct {
	ID, Name string
	Pos      float64
}

type fakeCard struct {
	ID, ShortLink, Name, Desc, Due, IDList, IDBoard string
	IDShort                                         int
	DueComplete, Closed                             bool
	IDMembers                                       []string
	Checklists                                      []map[string]any
}

// fakeReq is a request as served, credentials left out of the query.
type fakeReq struct {
	Method, Path string
	Query        url.Values
	Body         map[string]any
	Token        string
}

// fault answers matching requests with a canned response, times times; an
// apply fault also performs the request before answering (an "applied,
// then 5xx" write).
type fault struct {
	method, path string
	times        int
	status       int
	body         string
	header       map[string]string
	apply        bool
}

const (
	testKey     = "k3y0123456789abcdef0123456789abcd"
	testToken   = "t0ken-default-0123456789abcdef0123456789abcdef"
	userToken   = "t0ken-user-u3-9876543210fedcba9876543210fedcba"
	boardID     = "60d5ecb7a1b2c3d4e5f60001"
	otherBoard  = "60d5ecb7a1b2c3d4e5f60999"
	boardSL     = "Brd12345"
	idDima      = "5c1a00000000000000000001"
	idDPetrov   = "5c1a00000000000000000002"
	idOlga      = "5c1a00000000000000000003"
	idAlena     = "5c1a00000000000000000004"
	idBot       = "5c1a00000000000000000099"
	listInbox   = "5d1a000000000000000000a1"
	listWork    = "5d1a000000000000000000a2"
	listReview  = "5d1a000000000000000000a3"
	listDone    = "5d1a000000000000000000a4"
	cardForm    = "5e1a000000000000000000c1"
	cardLanding = "5e1a000000000000000000c2"
)

var testNow = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

func newFake(t *testing.T) *fakeTrello {
	f := &fakeTrello{
		t:           t,
		key:         testKey,
		tokens:      map[string]string{testToken: idBot, userToken: idOlga},
		board:       fakeBoard{ID: boardID, ShortLink: boardSL, Name: "Команда"},
		comments:    map[string][]map[string]any{},
		attachments: map[string][]map[string]any{},
		lists: []fakeList{
			{listInbox, "Входящие", 16384}, {listWork, "В работе", 32768},
			{listReview, "Ревью", 49152}, {listDone, "Готово", 65536},
		},
		members: []apiMember{
			{idDima, "Дмитрий Иванов", "dima"}, {idDPetrov, "Дмитрий Петров", "dpetrov"},
			{idOlga, "Ольга Смирнова", "olga"}, {idAlena, "Alena Kim", "alenakim"},
		},
		cards: []*fakeCard{
			{ID: cardForm, ShortLink: "AbCd1234", Name: "Проверить форму регистрации", Desc: "Форма падает на шаге 2",
				Due: "2026-11-25T09:00:00.000Z", IDList: listWork, IDMembers: []string{idDima}, IDShort: 1,
				Checklists: []map[string]any{{"id": "cl1", "name": "Шаги", "checkItems": []map[string]any{
					{"id": "i1", "name": "Воспроизвести", "state": "complete", "pos": 1},
					{"id": "i2", "name": "Починить", "state": "incomplete", "pos": 2}}}}},
			{ID: cardLanding, ShortLink: "EfGh5678", Name: "Обновить лендинг", IDList: listInbox, IDMembers: []string{idDima}, IDShort: 2},
			{ID: "5e1a000000000000000000c3", ShortLink: "IjKl9012", Name: "Обновить лендинг для партнёров", IDList: listInbox,
				IDMembers: []string{idOlga}, Due: "2026-11-19T12:00:00.000Z", IDShort: 3},
			{ID: "5e1a000000000000000000c4", ShortLink: "MnOp3456", Name: "Старая задача", IDList: listInbox, Closed: true,
				IDMembers: []string{idDima}, IDShort: 4},
			{ID: "5e1a000000000000000000c5", ShortLink: "QrSt7890", Name: "Сделанная задача", IDList: listDone,
				IDMembers: []string{idDima}, IDShort: 5},
			{ID: "5e1a000000000000000000c6", ShortLink: "UvWx1234", Name: "Чужая карточка", IDList: "5d1a0000000000000000ffff",
				IDBoard: otherBoard, IDShort: 1},
		},
	}
	for _, c := range f.cards {
		if c.IDBoard == "" {
			c.IDBoard = boardID
		}
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// client returns a Client on the fake; edit adjusts the config.
func (f *fakeTrello) client(edit func(*Config)) *Client {
	f.t.Helper()
	cfg := Config{
		APIBaseURL: f.srv.URL,
		Key:        testKey,
		Token:      testToken,
		Board:      boardSL,
		HTTPClient: f.srv.Client(),
		Now:        func() time.Time { return testNow },
		Members: func(tenant string) []Member {
			if tenant != "acme" {
				return nil
			}
			return []Member{
				{UserID: "u1", Name: "Дмитрий Иванов", Username: "@dima"},
				{UserID: "u3", Name: "Ольга Смирнова", TrelloID: idOlga},
				{UserID: "u4", Name: "Алёна Ким", Username: "alenakim"},
			}
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	c.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	return c
}

func (f *fakeTrello) addFault(ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, ft)
}

// requests returns the served requests, optionally only those of method
// (and path prefix).
func (f *fakeTrello) requests(method, pathPrefix string) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// writes returns the served POST and PUT requests.
func (f *fakeTrello) writes() []fakeReq {
	return append(f.requests(http.MethodPost, ""), f.requests(http.MethodPut, "")...)
}

func (f *fakeTrello) reset() {
	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
}

func (f *fakeTrello) card(ref string) *fakeCard {
	for _, c := range f.cards {
		if c.ID == ref || c.ShortLink == ref {
			return c
		}
	}
	return nil
}

func (f *fakeTrello) cardByName(name string) *fakeCard {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cards {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (f *fakeTrello) countCards(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.cards {
		if c.Name == name {
			n++
		}
	}
	return n
}

var (
	fakeIDPattern = regexp.MustCompile(`^(?:[A-Za-z0-9]{8}|[0-9a-f]{24})$`)
	cardPath      = regexp.MustCompile(`^/1/cards/([^/]+)(/actions|/actions/comments|/attachments)?$`)
	boardPath     = regexp.MustCompile(`^/1/boards/([^/]+)(/lists|/members|/cards/open)?$`)
)

func (f *fakeTrello) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	body := map[string]any{}
	if raw, _ := io.ReadAll(r.Body); len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, "invalid json", http.StatusBadRequest)
			return
		}
	}
	token := q.Get("token")
	rec := fakeReq{Method: r.Method, Path: r.URL.Path, Query: url.Values{}, Body: body, Token: token}
	for k, v := range q {
		if k != "key" && k != "token" {
			rec.Query[k] = v
		}
	}
	f.mu.Lock()
	before := f.before
	f.mu.Unlock()
	if before != nil {
		before(r.Method, r.URL.Path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, rec)
	for i := range f.faults {
		ft := &f.faults[i]
		if ft.times == 0 || ft.method != r.Method || ft.path != r.URL.Path {
			continue
		}
		ft.times--
		if ft.apply {
			f.route(httptest.NewRecorder(), r.Method, r.URL.Path, q, body, token)
		}
		for k, v := range ft.header {
			w.Header().Set(k, v)
		}
		if strings.HasPrefix(ft.body, "{") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.WriteHeader(ft.status)
		io.WriteString(w, ft.body)
		return
	}
	if q.Get("key") != f.key {
		plain(w, http.StatusUnauthorized, "invalid key")
		return
	}
	if _, ok := f.tokens[token]; !ok {
		plain(w, http.StatusUnauthorized, "invalid token")
		return
	}
	f.route(w, r.Method, r.URL.Path, q, body, token)
}

func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, msg)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}

// param reads a write parameter from the JSON body or the query.
func param(body map[string]any, q url.Values, name string) (any, bool) {
	if v, ok := body[name]; ok {
		return v, true
	}
	if q.Has(name) {
		return q.Get(name), true
	}
	return nil, false
}

// route serves one request; f.mu is held.
func (f *fakeTrello) route(w http.ResponseWriter, method, path string, q url.Values, body map[string]any, token string) {
	if m := boardPath.FindStringSubmatch(path); m != nil && method == http.MethodGet {
		if m[1] != f.board.ID && m[1] != f.board.ShortLink {
			plain(w, http.StatusNotFound, "The requested resource was not found.")
			return
		}
		switch m[2] {
		case "":
			writeJSON(w, pick(map[string]any{"id": f.board.ID, "name": f.board.Name, "shortLink": f.board.ShortLink,
				"url": "https://trello.com/b/" + f.board.ShortLink + "/team", "closed": false, "desc": ""}, q.Get("fields")))
		case "/lists":
			out := []map[string]any{}
			for _, l := range f.lists {
				out = append(out, pick(map[string]any{"id": l.ID, "name": l.Name, "closed": false, "pos": l.Pos,
					"idBoard": f.board.ID, "subscribed": false}, q.Get("fields")))
			}
			writeJSON(w, out)
		case "/members":
			writeJSON(w, f.members)
		case "/cards/open":
			out := []map[string]any{}
			for _, c := range f.cards {
				if c.IDBoard == f.board.ID && !c.Closed {
					out = append(out, pick(f.cardJSON(c), q.Get("fields")))
				}
			}
			writeJSON(w, out)
		}
		return
	}
	if path == "/1/cards" && method == http.MethodPost {
		f.cardSeq++
		n := f.cardSeq
		c := &fakeCard{ID: fmt.Sprintf("5e1b%020x", n), ShortLink: fmt.Sprintf("New%05d", n), IDBoard: f.board.ID, IDShort: 100 + n}
		f.applyCard(c, body, q)
		f.cards = append(f.cards, c)
		writeJSON(w, f.cardJSON(c))
		return
	}
	m := cardPath.FindStringSubmatch(path)
	if m == nil {
		plain(w, http.StatusNotFound, "Cannot "+method+" "+path)
		return
	}
	if !fakeIDPattern.MatchString(m[1]) {
		plain(w, http.StatusBadRequest, "invalid id")
		return
	}
	c := f.card(m[1])
	if c == nil {
		plain(w, http.StatusNotFound, "The requested resource was not found.")
		return
	}
	switch {
	case m[2] == "" && method == http.MethodGet:
		out := pick(f.cardJSON(c), q.Get("fields"))
		if q.Get("list") == "true" {
			out["list"] = map[string]any{"id": c.IDList, "name": f.listName(c.IDList)}
		}
		if q.Get("members") == "true" {
			ms := []apiMember{}
			for _, mem := range f.members {
				if slices.Contains(c.IDMembers, mem.ID) {
					ms = append(ms, mem)
				}
			}
			out["members"] = ms
		}
		if q.Get("checklists") == "all" {
			cl := c.Checklists
			if cl == nil {
				cl = []map[string]any{}
			}
			out["checklists"] = cl
		}
		writeJSON(w, out)
	case m[2] == "" && method == http.MethodPut:
		f.applyCard(c, body, q)
		writeJSON(w, f.cardJSON(c))
	case m[2] == "/actions" && method == http.MethodGet:
		out := []map[string]any{}
		for _, a := range f.comments[c.ID] {
			if q.Get("filter") == "" || q.Get("filter") == a["type"] {
				out = append(out, a)
			}
		}
		writeJSON(w, out)
	case m[2] == "/actions/comments" && method == http.MethodPost:
		text, _ := param(body, q, "text")
		f.seq++
		actor := f.tokens[token]
		var creator apiMember
		for _, mem := range append(f.members, apiMember{ID: idBot, FullName: "Arbiter Bot", Username: "arbiterbot"}) {
			if mem.ID == actor {
				creator = mem
			}
		}
		a := map[string]any{
			"id": fmt.Sprintf("5f1a%020x", f.seq), "idMemberCreator": actor, "type": "commentCard",
			"date": "2026-11-20T09:30:00.000Z", "appCreator": nil,
			"data": map[string]any{"text": text, "textData": map[string]any{"emoji": map[string]any{}},
				"card":  map[string]any{"id": c.ID, "name": c.Name, "idShort": c.IDShort, "shortLink": c.ShortLink},
				"board": map[string]any{"id": f.board.ID, "name": f.board.Name, "shortLink": f.board.ShortLink},
				"list":  map[string]any{"id": c.IDList, "name": f.listName(c.IDList)}},
			"memberCreator": map[string]any{"id": creator.ID, "fullName": creator.FullName, "username": creator.Username,
				"activityBlocked": false, "avatarHash": nil, "initials": "AB"},
			"limits": map[string]any{"reactions": map[string]any{}},
		}
		f.comments[c.ID] = append([]map[string]any{a}, f.comments[c.ID]...)
		writeJSON(w, a)
	case m[2] == "/attachments" && method == http.MethodGet:
		out := f.attachments[c.ID]
		if out == nil {
			out = []map[string]any{}
		}
		writeJSON(w, out)
	case m[2] == "/attachments" && method == http.MethodPost:
		u, _ := param(body, q, "url")
		name, _ := param(body, q, "name")
		if name == nil {
			name = u
		}
		f.seq++
		a := map[string]any{"id": fmt.Sprintf("5a1a%020x", f.seq), "bytes": nil, "date": "2026-11-20T09:30:00.000Z",
			"edgeColor": nil, "idMember": f.tokens[token], "isUpload": false, "mimeType": "", "name": name,
			"previews": []any{}, "url": u, "pos": 16384}
		f.attachments[c.ID] = append(f.attachments[c.ID], a)
		writeJSON(w, a)
	default:
		plain(w, http.StatusNotFound, "Cannot "+method+" "+path)
	}
}

func (f *fakeTrello) applyCard(c *fakeCard, body map[string]any, q url.Values) {
	if v, ok := param(body, q, "name"); ok {
		c.Name = v.(string)
	}
	if v, ok := param(body, q, "desc"); ok {
		c.Desc = v.(string)
	}
	if v, ok := param(body, q, "due"); ok {
		c.Due, _ = v.(string)
	}
	if v, ok := param(body, q, "dueComplete"); ok {
		c.DueComplete = v == true || v == "true"
	}
	if v, ok := param(body, q, "closed"); ok {
		c.Closed = v == true || v == "true"
	}
	if v, ok := param(body, q, "idList"); ok {
		c.IDList = v.(string)
	}
	if v, ok := param(body, q, "idMembers"); ok {
		c.IDMembers = nil
		switch ids := v.(type) {
		case []any:
			for _, id := range ids {
				c.IDMembers = append(c.IDMembers, id.(string))
			}
		case string:
			c.IDMembers = strings.Split(ids, ",")
		}
	}
}

func (f *fakeTrello) listName(id string) string {
	for _, l := range f.lists {
		if l.ID == id {
			return l.Name
		}
	}
	return ""
}

// cardJSON is a card as Trello's card object, null due included.
func (f *fakeTrello) cardJSON(c *fakeCard) map[string]any {
	var due any
	if c.Due != "" {
		due = c.Due
	}
	members := c.IDMembers
	if members == nil {
		members = []string{}
	}
	slug := strings.ToLower(strings.ReplaceAll(c.Name, " ", "-"))
	return map[string]any{
		"id": c.ID, "name": c.Name, "desc": c.Desc, "due": due, "dueComplete": c.DueComplete, "closed": c.Closed,
		"url":       fmt.Sprintf("https://trello.com/c/%s/%d-%s", c.ShortLink, c.IDShort, url.PathEscape(slug)),
		"shortUrl":  "https://trello.com/c/" + c.ShortLink,
		"shortLink": c.ShortLink, "idList": c.IDList, "idBoard": c.IDBoard, "idMembers": members,
		"idShort": c.IDShort, "idLabels": []string{}, "pos": 16384, "start": nil,
		"dateLastActivity": "2026-11-19T10:00:00.000Z",
		"badges":           map[string]any{"comments": 0, "attachments": 0, "checkItems": 0},
	}
}

// pick trims an object to the requested fields, id always kept, as Trello
// does.
func pick(obj map[string]any, fields string) map[string]any {
	if fields == "" || fields == "all" {
		return obj
	}
	out := map[string]any{"id": obj["id"]}
	for _, name := range strings.Split(fields, ",") {
		if v, ok := obj[name]; ok {
			out[name] = v
		}
	}
	return out
}

// Callers and helpers shared by the tests.

var (
	dmitry = tooltest.Dmitry
	olga   = tooltest.Olga
	nobody = tool.Caller{TenantID: "acme", UserID: "u9", Name: "Гость", Language: "ru"}
)

func toolByName(t *testing.T, c *Client, name string) tool.Tool {
	return tooltest.Named(t, c.Tools(), name)
}

func run(t *testing.T, c *Client, name string, caller tool.Caller, args, key string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := toolByName(t, c, name).Call(ctx, tool.Call{Caller: caller, Args: json.RawMessage(args), IdempotencyKey: key, Now: testNow})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// data decodes a Result's data.
func data(t *testing.T, res tool.Result) map[string]any {
	t.Helper()
	return tooltest.Data[map[string]any](t, res)
}
