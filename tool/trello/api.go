package trello

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Wire shapes of the Trello objects the client reads.

type apiCard struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Desc        string   `json:"desc"`
	Due         string   `json:"due"` // RFC 3339 with milliseconds; null reads as ""
	DueComplete bool     `json:"dueComplete"`
	Closed      bool     `json:"closed"`
	URL         string   `json:"url"`
	ShortLink   string   `json:"shortLink"`
	IDList      string   `json:"idList"`
	IDBoard     string   `json:"idBoard"`
	IDMembers   []string `json:"idMembers"`
	// Nested objects, present when asked for.
	List       *apiList       `json:"list,omitempty"`
	Members    []apiMember    `json:"members,omitempty"`
	Checklists []apiChecklist `json:"checklists,omitempty"`
}

type apiList struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Closed bool    `json:"closed"`
	Pos    float64 `json:"pos"`
}

type apiMember struct {
	ID       string `json:"id"`
	FullName string `json:"fullName"`
	Username string `json:"username"`
}

type apiChecklist struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	CheckItems []struct {
		Name  string `json:"name"`
		State string `json:"state"` // "complete" or "incomplete"
	} `json:"checkItems"`
}

type apiBoard struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	ShortLink string `json:"shortLink"`
}

// apiAction is a comment as Trello returns it: an action of type
// "commentCard" whose data holds the text.
type apiAction struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Date string `json:"date"`
	Data struct {
		Text string `json:"text"`
	} `json:"data"`
	MemberCreator *apiMember `json:"memberCreator,omitempty"`
}

type apiAttachment struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
}

// cardFields are the card fields every card read asks for.
const cardFields = "id,name,desc,due,dueComplete,closed,url,shortLink,idList,idBoard,idMembers"

// apiError is a failed Trello request. Its text names the method and path,
// never the query (which carries the credentials), and is scrubbed of the
// key and tokens.
type apiError struct {
	op      string // "GET /1/cards/AbCd1234"
	status  int    // 0 when Trello gave no answer
	msg     string // Trello's message or the transport failure
	unknown bool   // a write whose outcome is unknown: it may have been applied
	cause   error  // the context's error, when it ended the request
}

func (e *apiError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("%s: status %d: %s", e.op, e.status, e.msg)
	}
	return e.op + ": " + e.msg
}

func (e *apiError) Unwrap() error { return e.cause }

// asAPIError returns err as an *apiError, wrapping a foreign error.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return &apiError{op: "request", msg: err.Error(), cause: err}
}

// statusOf returns the HTTP status of a failed request, 0 when none.
func statusOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	return 0
}

// isNotFound reports whether Trello said the object does not exist: 404,
// or 400 "invalid id" for an id that cannot name anything.
func isNotFound(err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.status == http.StatusNotFound ||
		ae.status == http.StatusBadRequest && strings.Contains(strings.ToLower(ae.msg), "invalid id")
}

func isAuth(err error) bool {
	s := statusOf(err)
	return s == http.StatusUnauthorized || s == http.StatusForbidden
}

// outcomeUnknown reports whether a write may have been applied although it
// failed.
func outcomeUnknown(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.unknown
}

// Retry bounds.
const (
	backoffBase  = 300 * time.Millisecond
	backoffMax   = 5 * time.Second
	maxRetryWait = 30 * time.Second
)

// Body limits.
const (
	maxBodyBytes  = 8 << 20
	maxErrorBytes = 1 << 10
	maxErrorRunes = 200
)

// request is one Trello API request.
type request struct {
	method string
	path   string // "/1/cards/AbCd1234"
	query  url.Values
	body   any // encoded as JSON when non-nil
}

// do sends req with the session's credentials and decodes a 2xx answer
// into out (when non-nil). 429 is retried, as are 5xx and missing answers
// of GET and PUT, up to MaxRetries times with back-off, honouring
// Retry-After and never waiting past ctx's deadline. A POST that got 5xx
// or no answer is not repeated here: its error is marked outcome-unknown
// and the caller reconciles.
func (s *session) do(ctx context.Context, req request, out any) error {
	c := s.c
	op := req.method + " " + req.path
	q := url.Values{}
	for k, v := range req.query {
		q[k] = v
	}
	q.Set("key", c.key)
	q.Set("token", s.token)
	target := c.base + req.path + "?" + q.Encode()
	var payload []byte
	if req.body != nil {
		var err error
		if payload, err = json.Marshal(req.body); err != nil {
			return &apiError{op: op, msg: "encode body: " + err.Error()}
		}
	}
	repeatable := req.method == http.MethodGet || req.method == http.MethodPut
	for attempt := 0; ; attempt++ {
		hr, err := http.NewRequestWithContext(ctx, req.method, target, bytes.NewReader(payload))
		if err != nil {
			return &apiError{op: op, msg: s.scrub(unwrapURLError(err).Error())}
		}
		hr.Header.Set("Accept", "application/json")
		if payload != nil {
			hr.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(hr)
		if err != nil {
			ae := &apiError{op: op, msg: s.scrub(unwrapURLError(err).Error()), unknown: !repeatable}
			if ctx.Err() != nil {
				ae.cause, ae.msg = ctx.Err(), "no answer: "+ctx.Err().Error()
				return ae
			}
			if !repeatable || attempt >= c.maxRetries {
				return ae
			}
			if werr := s.wait(ctx, backoff(attempt), ae); werr != nil {
				return werr
			}
			continue
		}
		code := resp.StatusCode
		if code >= 200 && code <= 299 {
			err := decodeBody(resp.Body, out)
			resp.Body.Close()
			if err != nil {
				return &apiError{op: op, status: code, msg: s.scrub("unreadable answer: " + err.Error())}
			}
			return nil
		}
		ae := &apiError{op: op, status: code, msg: s.scrub(errorMessage(resp.Body))}
		resp.Body.Close()
		retry := code == http.StatusTooManyRequests || code >= 500 && code <= 599 && repeatable
		if code >= 500 && !repeatable {
			ae.unknown = true
		}
		if code >= 300 && code <= 399 {
			ae.msg = "unexpected redirect, not followed"
		}
		if !retry || attempt >= c.maxRetries {
			return ae
		}
		wait, ok := retryAfter(resp.Header, c.now())
		if !ok {
			wait = backoff(attempt)
		}
		if werr := s.wait(ctx, wait, ae); werr != nil {
			return werr
		}
	}
}

// wait sleeps d before a retry of the request that failed with last; it
// returns last, annotated, when d exceeds the bound or the time ctx has
// left, and the context's error when ctx ends during the wait.
func (s *session) wait(ctx context.Context, d time.Duration, last *apiError) error {
	if d > maxRetryWait {
		last.msg += fmt.Sprintf(" (Trello asked to wait %s; not waiting that long)", d.Round(time.Second))
		return last
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		last.msg += fmt.Sprintf(" (a retry in %s would pass the deadline)", d.Round(time.Millisecond))
		return last
	}
	if err := s.c.sleep(ctx, d); err != nil {
		return &apiError{op: last.op, status: last.status, msg: last.msg + "; " + err.Error(), cause: err, unknown: last.unknown}
	}
	return nil
}

// backoff is the wait before retry attempt+1 when Trello does not say:
// exponential from backoffBase with jitter, at most backoffMax.
func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 8)
	d += time.Duration(rand.Int64N(int64(d/4) + 1))
	return min(d, backoffMax)
}

// retryAfter reads Retry-After as seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the full
// URL and so the credentials.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func decodeBody(r io.Reader, out any) error {
	data, err := io.ReadAll(io.LimitReader(r, maxBodyBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxBodyBytes {
		return fmt.Errorf("answer larger than %d bytes", maxBodyBytes)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// errorMessage reads an error body: Trello answers most errors in plain
// text ("invalid id", "unauthorized card permission requested") and rate
// limits in JSON ({"error": "API_TOKEN_LIMIT_EXCEEDED", "message": ...}).
func errorMessage(r io.Reader) string {
	data, _ := io.ReadAll(io.LimitReader(r, maxErrorBytes))
	text := strings.TrimSpace(string(data))
	var j struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &j) == nil && (j.Error != "" || j.Message != "") {
		text = strings.TrimSpace(j.Message + " " + j.Error)
		if j.Message != "" && j.Error != "" {
			text = j.Message + " (" + j.Error + ")"
		}
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "")
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > maxErrorRunes {
		text = string(r[:maxErrorRunes]) + "…"
	}
	if text == "" {
		text = "no message"
	}
	return text
}

// redacted replaces a credential found in a message.
const redacted = "[redacted]"

// scrub removes the key and the tokens from s, raw or query-escaped.
func (s *session) scrub(text string) string {
	for _, secret := range []string{s.c.key, s.token, s.c.token} {
		if len(secret) < 4 {
			continue
		}
		text = strings.ReplaceAll(text, secret, redacted)
		if esc := url.QueryEscape(secret); esc != secret {
			text = strings.ReplaceAll(text, esc, redacted)
		}
	}
	return text
}

// API calls.

func (s *session) card(ctx context.Context, ref string, extra url.Values) (*apiCard, error) {
	q := url.Values{"fields": {cardFields}}
	for k, v := range extra {
		q[k] = v
	}
	var card apiCard
	if err := s.do(ctx, request{method: http.MethodGet, path: "/1/cards/" + url.PathEscape(ref), query: q}, &card); err != nil {
		return nil, err
	}
	return &card, nil
}

func (s *session) boardPath(suffix string) string {
	return "/1/boards/" + url.PathEscape(s.c.board) + suffix
}

// lists returns the board's open lists in board order.
func (s *session) lists(ctx context.Context) ([]apiList, error) {
	var out []apiList
	err := s.do(ctx, request{method: http.MethodGet, path: s.boardPath("/lists"),
		query: url.Values{"filter": {"open"}, "fields": {"id,name,closed,pos"}}}, &out)
	return out, err
}

// boardMembers returns the board's members.
func (s *session) boardMembers(ctx context.Context) ([]apiMember, error) {
	var out []apiMember
	err := s.do(ctx, request{method: http.MethodGet, path: s.boardPath("/members"),
		query: url.Values{"fields": {"id,fullName,username"}}}, &out)
	return out, err
}

// openCards returns the board's open (not archived) cards.
func (s *session) openCards(ctx context.Context) ([]apiCard, error) {
	var out []apiCard
	err := s.do(ctx, request{method: http.MethodGet, path: s.boardPath("/cards/open"),
		query: url.Values{"fields": {cardFields}}}, &out)
	return out, err
}

// boardID returns the board's id, read once when Config.Board is a short
// link.
func (s *session) boardID(ctx context.Context) (string, error) {
	c := s.c
	c.boardMu.Lock()
	id := c.boardID
	c.boardMu.Unlock()
	if id != "" {
		return id, nil
	}
	var b apiBoard
	if err := s.do(ctx, request{method: http.MethodGet, path: s.boardPath(""),
		query: url.Values{"fields": {"id,name,url,shortLink"}}}, &b); err != nil {
		return "", err
	}
	if b.ID == "" {
		return "", &apiError{op: "GET " + s.boardPath(""), status: http.StatusOK, msg: "board without id"}
	}
	c.boardMu.Lock()
	c.boardID = strings.ToLower(b.ID)
	c.boardMu.Unlock()
	return strings.ToLower(b.ID), nil
}

// boardState is the live board one write or context depends on.
type boardState struct {
	lists   []apiList
	members []apiMember
	cards   []apiCard // open cards, when asked for
}

// readBoard reads the board's lists and members, and its open cards when
// withCards, concurrently.
func (s *session) readBoard(ctx context.Context, withCards bool) (*boardState, error) {
	var st boardState
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { st.lists, errs[0] = s.lists(ctx) })
	wg.Go(func() { st.members, errs[1] = s.boardMembers(ctx) })
	if withCards {
		wg.Go(func() { st.cards, errs[2] = s.openCards(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	sortLists(st.lists)
	return &st, nil
}

// sortLists orders lists by position, as the board shows them; Trello
// returns them so already, and the stable sort keeps that order on ties.
func sortLists(ls []apiList) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Pos < ls[j-1].Pos; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}
