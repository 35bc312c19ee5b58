// Package trello is the Trello backend of the task tools: the same five
// actions as the embedded board (create_task, update_task, comment_task,
// complete_task, list_my_tasks) with the same argument names, run against
// one Trello board through the Trello REST API, so a tenant switches
// backends in configuration without changing what the model is told.
//
// Besides the actions, a Client is a tool.ContextSource (the board's
// members, lists and the caller's open cards, cached a few seconds per
// tenant) and a tool.LinkReader: a Trello card link is answered from
// GET /1/cards/{shortLink} (name, description, due date, status, URL), with
// no model involved.
//
// Every argument that names something (a card, a member, a list) is matched
// by code against the live board, read right before the write: several
// matches come back as an ambiguous result and none as not found, never as
// a guess. The matching rules are the embedded board's (tool/taskboard),
// shared through tool/internal/names, declension tolerance included.
//
// Trello has no idempotency keys, so writes are made idempotent here:
// create_task and comment_task append a marker line carrying the call's
// idempotency key ("—" then "arbiter:<key>") to the card description or the
// comment, and look for it before writing, so a repeated call returns the
// first card or comment instead of writing twice; update_task and
// complete_task set values and are idempotent by nature.
//
// The package does not decide on confirmation at run time (the engine does
// that from each tool's Spec), store anything outside the process, or read
// configuration files.
package trello

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/internal/wait"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/internal/action"
	"github.com/arbiterhq/arbiter/tool/internal/board"
	"github.com/arbiterhq/arbiter/tool/reply"
)

// Action names; they are the embedded board's.
const (
	ActionCreate   = board.ActionCreate
	ActionUpdate   = board.ActionUpdate
	ActionComment  = board.ActionComment
	ActionComplete = board.ActionComplete
	ActionListMine = board.ActionListMine
)

// SourceName is the Name of the client as a context source and the Source
// of every Result it returns.
const SourceName = "trello"

// Defaults for a zero Config.
const (
	DefaultAPIBaseURL = "https://api.trello.com"
	DefaultMaxRetries = 2
	DefaultContextTTL = 5 * time.Second
)

// Member ties a tenant user to a Trello member, so "me" and the caller's
// own cards can be found on the board.
type Member struct {
	// UserID is the tenant user's id, as in tool.Caller.UserID.
	UserID string
	// Name is the user's name in the tenant; it is matched as well as the
	// Trello full name, so either finds the member. Optional.
	Name string
	// TrelloID is the Trello member id; Username the Trello username
	// (without "@"). One of them is required.
	TrelloID string
	Username string
}

// Config configures a Client. Zero values select the documented defaults.
type Config struct {
	// APIBaseURL is the Trello API root; default DefaultAPIBaseURL.
	APIBaseURL string
	// Key is the Trello API key. Required.
	Key string
	// Token is the default connection's token, used for a user without a
	// connection of their own.
	Token string
	// UserTokens returns a user's own Trello token, when the user has
	// connected Trello; their calls then act as them. It must be safe for
	// concurrent use. Token or UserTokens is required.
	UserTokens func(tenant, user string) (token string, ok bool)
	// Board is the board's id or short link. Required.
	Board string
	// DoneList is the name of the list complete_task moves a card to;
	// default the board's last open list.
	DoneList string
	// Confirm overrides the confirmation policy per action name. Defaults:
	// create_task and complete_task "always", the others "never".
	Confirm map[string]tool.Confirm
	// Members returns the tenant's users with their Trello identities. It
	// is called during every call, so it must be cheap, and it must be safe
	// for concurrent use.
	Members func(tenant string) []Member
	// AttachmentURL turns a stored file reference (a Telegram file id, say)
	// into an http(s) URL Trello can fetch, for create_task's attachment.
	// Without it only URL attachments are accepted. The URL is sent to
	// Trello, so it must not embed a secret such as a bot token, and its
	// errors appear in results, so they must not either.
	AttachmentURL func(ctx context.Context, tenant, ref string) (string, error)
	// HTTPClient sends the requests; default a client with a 30 s timeout.
	// Redirects are never followed, whichever client is given.
	HTTPClient *http.Client
	// Now is the clock; default time.Now.
	Now func() time.Time
	// MaxRetries bounds the repeats of a request Trello answered with 429
	// or 5xx (and of a read that got no answer); default DefaultMaxRetries.
	// A negative value means none.
	MaxRetries int
	// ContextTTL is how long LiveContext reuses a tenant's board state;
	// default DefaultContextTTL.
	ContextTTL time.Duration
	// Requires names the integration a user must have connected to be
	// shown the board's tools (tool.Spec.Requires); with it, leave Token
	// empty so that nobody acts with a connection not their own.
	Requires string
}

// Client is one Trello board as task tools, a context source and a link
// reader. It is safe for concurrent use.
type Client struct {
	base       string
	key        string
	token      string
	userTokens func(tenant, user string) (string, bool)
	requires   string
	board      string
	doneList   string
	confirm    map[string]tool.Confirm
	members    func(string) []Member
	attachURL  func(context.Context, string, string) (string, error)
	http       *http.Client
	now        func() time.Time
	maxRetries int
	ttl        time.Duration
	reply      reply.Builder

	// sleep waits between retries; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	boardMu sync.Mutex
	boardID string // the board's id once known

	cache stateCache
	locks keyLocks
}

var (
	_ tool.ContextSource = (*Client)(nil)
	_ tool.LinkReader    = (*Client)(nil)
)

var boardIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{24}$`)

// New validates cfg and returns a Client. It returns an error for a
// missing key or board, no connection at all (neither Token nor
// UserTokens), a malformed APIBaseURL, or an unknown action or policy in
// Confirm. It makes no request.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.Key) == "" {
		return nil, errors.New("trello: Config.Key is required")
	}
	boardRef := strings.TrimSpace(cfg.Board)
	if boardRef == "" {
		return nil, errors.New("trello: Config.Board is required")
	}
	if sl, ok := boardShortLink(boardRef); ok {
		boardRef = sl
	}
	if strings.ContainsAny(boardRef, "/?#% ") {
		return nil, fmt.Errorf("trello: Config.Board %q is neither a board id nor a short link", boardRef)
	}
	if cfg.Token == "" && cfg.UserTokens == nil {
		return nil, errors.New("trello: Config.Token or Config.UserTokens is required")
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.APIBaseURL), "/")
	if base == "" {
		base = DefaultAPIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("trello: Config.APIBaseURL %q is not an http(s) URL without query or credentials", cfg.APIBaseURL)
	}
	confirm, err := action.Policies("trello", board.DefaultConfirm(), cfg.Confirm)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		hc = &copied
	}
	// A redirect would be a misconfiguration; following one could carry
	// the request elsewhere, so it is returned as an answer instead.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{
		base:       base,
		key:        cfg.Key,
		token:      cfg.Token,
		userTokens: cfg.UserTokens,
		requires:   cfg.Requires,
		board:      boardRef,
		doneList:   strings.Join(strings.Fields(cfg.DoneList), " "),
		confirm:    confirm,
		members:    cfg.Members,
		attachURL:  cfg.AttachmentURL,
		http:       hc,
		now:        cfg.Now,
		maxRetries: cfg.MaxRetries,
		ttl:        cfg.ContextTTL,
		sleep:      wait.Sleep,
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.reply = reply.Builder{Source: SourceName, Now: c.now, EncodeFailure: "не удалось сформировать ответ"}
	if cfg.MaxRetries == 0 {
		c.maxRetries = DefaultMaxRetries
	}
	if c.maxRetries < 0 {
		c.maxRetries = 0
	}
	if c.ttl <= 0 {
		c.ttl = DefaultContextTTL
	}
	if boardIDPattern.MatchString(boardRef) {
		c.boardID = strings.ToLower(boardRef)
	}
	return c, nil
}

// Name returns "trello".
func (c *Client) Name() string { return SourceName }

// Tools returns the board's actions: create_task, update_task,
// comment_task, complete_task and list_my_tasks. Every outcome of a call
// that ran, including Trello failures, is a Result: 404 is
// StatusNotFound, a refused credential, a rate limit, a 5xx or a timeout
// is StatusError.
func (c *Client) Tools() []tool.Tool {
	return board.Tools(board.Config{Owner: "trello", Docs: docs, Confirm: c.confirm, WriteTimeout: writeTimeout, Reply: c.reply, Backend: board.Backend{
		Create: c.createTask, Update: c.updateTask, Comment: c.commentTask, Complete: c.completeTask,
		ListMine: c.listMyTasks, Preview: c.preview,
	}, Requires: c.requires})
}

// session is one call's connection: the caller and the token it acts with.
type session struct {
	c      *Client
	caller tool.Caller
	token  string
}

// session picks the caller's own token, else the default one; ok is false
// when there is neither.
func (c *Client) session(caller tool.Caller) (*session, bool) {
	if c.userTokens != nil {
		if tok, ok := c.userTokens(caller.TenantID, caller.UserID); ok && strings.TrimSpace(tok) != "" {
			return &session{c: c, caller: caller, token: strings.TrimSpace(tok)}, true
		}
	}
	if c.token == "" {
		return nil, false
	}
	return &session{c: c, caller: caller, token: c.token}, true
}

// tenantMembers returns the tenant's users with a Trello identity.
func (c *Client) tenantMembers(tenant string) []Member {
	if c.members == nil {
		return nil
	}
	var out []Member
	for _, m := range c.members(tenant) {
		m.UserID = strings.TrimSpace(m.UserID)
		m.TrelloID = strings.TrimSpace(m.TrelloID)
		m.Username = strings.TrimPrefix(strings.TrimSpace(m.Username), "@")
		if m.UserID == "" || (m.TrelloID == "" && m.Username == "") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// self returns the caller's tenant mapping, if any.
func (c *Client) self(caller tool.Caller) (Member, bool) {
	for _, m := range c.tenantMembers(caller.TenantID) {
		if m.UserID == caller.UserID {
			return m, true
		}
	}
	return Member{}, false
}

// keyLocks serializes calls that share an idempotency key within this
// process, so two concurrent repeats cannot both miss the marker and
// create twice.
type keyLocks struct {
	mu    sync.Mutex
	held  map[string]chan struct{}
	count map[string]int
}

// lockKey takes the lock of the call's idempotency key in its tenant, or
// returns ctx's error; unlock releases it. A call without a key takes no
// lock.
func (c *Client) lockKey(ctx context.Context, call tool.Call) (unlock func(), err error) {
	if call.IdempotencyKey == "" {
		return func() {}, nil
	}
	return c.locks.lock(ctx, call.Caller.TenantID+"\x00"+call.IdempotencyKey)
}

// lock takes the lock of key, or returns ctx's error; unlock releases it.
func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.held == nil {
		l.held, l.count = map[string]chan struct{}{}, map[string]int{}
	}
	ch := l.held[key]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.held[key] = ch
	}
	l.count[key]++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		l.count[key]--
		if l.count[key] == 0 {
			delete(l.count, key)
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
	select {
	case ch <- struct{}{}:
		return func() { <-ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
