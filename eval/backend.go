package eval

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/server"
)

// The journal says what the engine did; the system of record says what
// came of it. A scenario's before: requests set the backend up (a
// simulator's reset), and its after: checks ask it afterwards — the
// payments system's refunds, a board's cards — with expectations on its
// JSON answer by path, so "the customer got the change we promised" is
// measured where the change lives.

// Request is one HTTP request to a backend: before a scenario's turns, or
// after them with what its answer must hold.
type Request struct {
	// Method defaults to GET; URL is expanded from the suite's
	// environment (${PAYSIM_URL}/refunds); Body is sent as JSON.
	Method string `yaml:"method"`
	URL    string `yaml:"url"`
	Body   string `yaml:"body"`
	// Status is the answer's expected status; 0: any 2xx.
	Status int `yaml:"status"`
	// Expect maps JSON paths of the answer ($, $.refunds[0].amount,
	// $.length — an array's, object's or string's length) to the value
	// each must have, compared as JSON.
	Expect map[string]any `yaml:"expect"`
}

// backendTimeout bounds one request to a backend.
const backendTimeout = 10 * time.Second

// do sends r and returns where its answer differs from the expectation.
func (r Request) do(ctx context.Context, getenv func(string) string) ([]string, error) {
	url := os.Expand(r.URL, getenv)
	ctx, cancel := context.WithTimeout(ctx, backendTimeout)
	defer cancel()
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, cmp.Or(r.Method, http.MethodGet), url, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, r.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", req.Method, r.URL, err)
	}
	where := req.Method + " " + r.URL
	switch {
	case r.Status != 0 && resp.StatusCode != r.Status:
		return []string{fmt.Sprintf("%s: status %d, want %d", where, resp.StatusCode, r.Status)}, nil
	case r.Status == 0 && resp.StatusCode/100 != 2:
		return []string{fmt.Sprintf("%s: status %d, want 2xx", where, resp.StatusCode)}, nil
	}
	if len(r.Expect) == 0 {
		return nil, nil
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return []string{fmt.Sprintf("%s: the answer is not JSON: %v", where, err)}, nil
	}
	var diffs []string
	for _, path := range slices.Sorted(maps.Keys(r.Expect)) {
		got, err := jsonPath(doc, path)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: %s: %v", where, path, err))
			continue
		}
		if !sameJSON(r.Expect[path], got) {
			w, _ := json.Marshal(r.Expect[path])
			g, _ := json.Marshal(got)
			diffs = append(diffs, fmt.Sprintf("%s: %s: want %s, got %s", where, path, w, g))
		}
	}
	return diffs, nil
}

// sameJSON compares two values as their JSON forms decoded (numbers as
// numbers, whatever type they were read as).
func sameJSON(want, got any) bool {
	w, err1 := json.Marshal(want)
	g, err2 := json.Marshal(got)
	if err1 != nil || err2 != nil {
		return false
	}
	var a, b any
	_ = json.Unmarshal(w, &a)
	_ = json.Unmarshal(g, &b)
	return reflect.DeepEqual(a, b)
}

// jsonPath finds path in doc: "$", then ".name" or "[N]" steps; a last
// step "length" on an array, an object without such a key, or a string
// is its length.
func jsonPath(doc any, path string) (any, error) {
	if !strings.HasPrefix(path, "$") {
		return nil, errors.New("a path starts with $")
	}
	cur, rest := doc, path[1:]
	for rest != "" {
		var step string
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			step, rest = rest[1:end+1], rest[end+1:]
			next, err := field(cur, step, rest == "")
			if err != nil {
				return nil, err
			}
			cur = next
		case '[':
			end := strings.IndexByte(rest, ']')
			n, err := strconv.Atoi(rest[1:max(end, 1)])
			if end < 0 || err != nil {
				return nil, fmt.Errorf("bad index in %q", rest)
			}
			rest = rest[end+1:]
			arr, ok := cur.([]any)
			if !ok || n < 0 || n >= len(arr) {
				return nil, fmt.Errorf("no element [%d]", n)
			}
			cur = arr[n]
		default:
			return nil, fmt.Errorf("unexpected %q", rest)
		}
	}
	return cur, nil
}

// field is step of cur: an object's key, or, last, "length".
func field(cur any, step string, last bool) (any, error) {
	if m, ok := cur.(map[string]any); ok {
		if v, ok := m[step]; ok {
			return v, nil
		}
	}
	if step == "length" && last {
		switch x := cur.(type) {
		case []any:
			return len(x), nil
		case map[string]any:
			return len(x), nil
		case string:
			return len([]rune(x)), nil
		}
	}
	return nil, fmt.Errorf("no field %q", step)
}

// runRequests sends each request; their differences from the
// expectations, and an error when one could not be sent.
func runRequests(ctx context.Context, reqs []Request, getenv func(string) string) ([]string, error) {
	var diffs []string
	for _, r := range reqs {
		d, err := r.do(ctx, getenv)
		if err != nil {
			return diffs, err
		}
		diffs = append(diffs, d...)
	}
	return diffs, nil
}

// decide approves or rejects, as identity id, the newest action of the
// scenario's conversation that waits for approvers, and returns the
// reply of the turn that carried it out.
func decide(ctx context.Context, s *server.Server, id chat.Identity, conv, decision string) (chat.Outbound, error) {
	list, err := s.Engine.Actions(ctx, id, "proposed")
	if err != nil {
		return chat.Outbound{}, err
	}
	for _, a := range list {
		if a.ConversationID == conv {
			_, out, err := s.Engine.Decide(ctx, id, a.ID, decision == "approve")
			return out, err
		}
	}
	return chat.Outbound{}, fmt.Errorf("no action of the conversation waits for %s's decision", id.UserID)
}
