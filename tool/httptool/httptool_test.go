package httptool

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

var (
	olga   = tool.Caller{TenantID: "acme", UserID: "u3", Name: "Ольга Смирнова", Language: "en"}
	dmitry = tool.Caller{TenantID: "acme", UserID: "u1", Name: "Дмитрий Иванов", Language: "ru"}
)

// seen is one request as the test server received it.
type seen struct {
	method string
	path   string
	query  url.Values
	header http.Header
	body   string
}

// recorder serves every request with handle and keeps what it received.
type recorder struct {
	mu       sync.Mutex
	requests []seen
}

func (r *recorder) server(t *testing.T, handle http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, seen{req.Method, req.URL.Path, req.URL.Query(), req.Header.Clone(), string(b)})
		r.mu.Unlock()
		handle(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (r *recorder) last(t *testing.T) seen {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.requests) == 0 {
		t.Fatal("the endpoint received no request")
	}
	return r.requests[len(r.requests)-1]
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

func newTool(t *testing.T, cfg Config) *Tool {
	t.Helper()
	tl, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tl
}

func call(t *testing.T, tl *Tool, c tool.Call) tool.Result {
	t.Helper()
	res, err := tl.Call(context.Background(), c)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if res.Source != tl.spec.Name || res.ObservedAt.IsZero() {
		t.Errorf("result source %q observed %v: want the tool name and a time", res.Source, res.ObservedAt)
	}
	return res
}

func reply(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func TestRequestWireFormat(t *testing.T) {
	for _, method := range []string{"", "PUT", "PATCH"} {
		t.Run("method "+method, func(t *testing.T) {
			var rec recorder
			srv := rec.server(t, reply(200, "application/json", `{"ok":true}`))
			cfg := validConfig()
			cfg.URL, cfg.Method = srv.URL+"/v1/payments?version=2", method
			cfg.Headers = map[string]string{"Authorization": "Bearer sk-live-0123456789", "x-request-source": "chat"}
			tl := newTool(t, cfg)

			args := `{ "invoice": "INV-7",  "amount": 12.50 }`
			call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(args), IdempotencyKey: "act-42"})

			got := rec.last(t)
			want := method
			if want == "" {
				want = "POST"
			}
			if got.method != want || got.path != "/v1/payments" || got.query.Get("version") != "2" {
				t.Errorf("request line: %s %s ?%s", got.method, got.path, got.query.Encode())
			}
			if got.body != args {
				t.Errorf("body = %q, want the arguments as given %q", got.body, args)
			}
			for name, value := range map[string]string{
				"Content-Type":     "application/json",
				"Idempotency-Key":  "act-42",
				"X-Arbiter-Tenant": "acme",
				"X-Arbiter-User":   "u3",
				"Authorization":    "Bearer sk-live-0123456789",
				"X-Request-Source": "chat",
				"Accept":           "application/json",
			} {
				if g := got.header.Get(name); g != value {
					t.Errorf("header %s = %q, want %q", name, g, value)
				}
			}
		})
	}
}

func TestRequestWithoutKeyOrUser(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(204, "", ""))
	cfg := validConfig()
	cfg.URL = srv.URL
	tl := newTool(t, cfg)
	res := call(t, tl, tool.Call{Caller: tool.Caller{TenantID: "acme"}})
	if res.Status != tool.StatusOK || res.Data != nil {
		t.Errorf("204: %+v", res)
	}
	got := rec.last(t)
	if _, has := got.header["Idempotency-Key"]; has {
		t.Error("Idempotency-Key sent for a call without a key")
	}
	if _, has := got.header["X-Arbiter-User"]; has {
		t.Error("X-Arbiter-User sent for a caller without a user")
	}
	if got.body != "{}" {
		t.Errorf("empty arguments sent as %q, want {}", got.body)
	}
}

func TestCallerWithoutTenantIsAGoError(t *testing.T) {
	tl := newTool(t, validConfig())
	_, err := tl.Call(context.Background(), tool.Call{Caller: tool.Caller{UserID: "u1"}, Args: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "httptool pay_invoice: call") {
		t.Errorf("err = %v, want a wrapped call error", err)
	}
}

func TestGETSendsQueryParameters(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, "application/json", `[]`))
	cfg := validConfig()
	cfg.Name, cfg.Method, cfg.Risk = "search_clients", "GET", tool.RiskRead
	cfg.URL = srv.URL + "/clients?v=1"
	cfg.InputSchema = json.RawMessage(searchSchema)
	tl := newTool(t, cfg)

	call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(`{"q":"Ольга & co=1","limit":5,"exact":true,"sort":null,"min":1.5e3}`)})
	got := rec.last(t)
	if got.method != "GET" || got.body != "" {
		t.Errorf("GET sent %s with body %q", got.method, got.body)
	}
	if ct := got.header.Get("Content-Type"); ct != "" {
		t.Errorf("GET sent Content-Type %q", ct)
	}
	want := url.Values{"q": {"Ольга & co=1"}, "limit": {"5"}, "exact": {"true"}, "min": {"1.5e3"}, "v": {"1"}}
	if got.query.Encode() != want.Encode() {
		t.Errorf("query = %s, want %s", got.query.Encode(), want.Encode())
	}
	if got.header.Get("X-Arbiter-Tenant") != "acme" {
		t.Error("GET lost the tenant header")
	}

	before := rec.count()
	res := call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(`{"q":{"nested":1}}`)})
	if res.Status != tool.StatusError || !strings.Contains(res.Error, `argument "q"`) {
		t.Errorf("nested argument: %+v", res)
	}
	if rec.count() != before {
		t.Error("a request was sent for arguments that cannot be a query")
	}
}

func TestStatusMapping(t *testing.T) {
	cases := []struct {
		name        string
		handler     http.HandlerFunc
		caller      tool.Caller
		status      tool.Status
		data        string // exact Data; "-" for none; "" to skip
		errContains string
		text        string // substring of Text
	}{
		{"200 json with message", reply(200, "application/json", `{"id":"p1","message":"Оплачено"}`), olga,
			tool.StatusOK, `{"id":"p1","message":"Оплачено"}`, "", "Оплачено"},
		{"201 json text wins over message", reply(201, "application/json", `{"text":"Payment created","message":"ok"}`), olga,
			tool.StatusOK, `{"text":"Payment created","message":"ok"}`, "", "Payment created"},
		{"200 plain text", reply(200, "text/plain", "accepted <b>now</b>\n"), olga,
			tool.StatusOK, `"accepted <b>now</b>"`, "", ""},
		{"204 empty", reply(204, "", ""), olga, tool.StatusOK, "-", "", ""},
		{"404 with message", reply(404, "application/json", `{"message":"no invoice INV-7"}`), olga,
			tool.StatusNotFound, `{"message":"no invoice INV-7"}`, "", "no invoice INV-7"},
		{"404 bare", reply(404, "text/html", "<h1>Not Found</h1>"), dmitry,
			tool.StatusNotFound, "-", "", "не нашёл"},
		{"409", reply(409, "application/json", `{"message":"already paid"}`), olga,
			tool.StatusError, "", "conflict: already paid", "already paid"},
		{"409 bare", reply(409, "", ""), olga, tool.StatusError, "-", "conflict", "conflicts with the current state"},
		{"422 nested error message", reply(422, "application/json", `{"error":{"message":"amount must be positive"}}`), olga,
			tool.StatusError, `{"error":{"message":"amount must be positive"}}`, "rejected by the endpoint (status 422): amount must be positive", "amount must be positive"},
		{"400 problem detail", reply(400, "application/problem+json", `{"title":"Bad Request","detail":"unknown currency XXX"}`), olga,
			tool.StatusError, "", "(status 400): unknown currency XXX", "unknown currency XXX"},
		{"400 plain text", reply(400, "text/plain; charset=utf-8", "invoice\tis\nrequired"), olga,
			tool.StatusError, "-", "invoice is required", "invoice is required"},
		{"401", reply(401, "application/json", `{"message":"token expired"}`), olga,
			tool.StatusError, "-", "the endpoint refused the credentials (status 401)", "refused the tool's credentials"},
		{"403", reply(403, "", ""), dmitry, tool.StatusError, "-", "refused the credentials (status 403)", "учётные данные"},
		{"429", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
		}, olga, tool.StatusError, "-", "temporarily unavailable (status 429); the call is not retried automatically; the endpoint asks to wait 30s", "not retried automatically"},
		{"500", reply(500, "text/html", "<html>stack trace</html>"), olga,
			tool.StatusError, "-", "temporarily unavailable (status 500)", "try again later"},
		{"503 ru", reply(503, "application/json", `{"message":"maintenance"}`), dmitry,
			tool.StatusError, "-", "temporarily unavailable (status 503); the call is not retried automatically: maintenance", "Повторять автоматически не буду"},
		{"302 not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, olga, tool.StatusError, "-", "redirect (status 302), which is not followed", "misconfigured"},
		{"418", reply(418, "application/json", `{"error":"teapot"}`), olga,
			tool.StatusError, "-", "unexpected status 418 from the endpoint: teapot", "(418)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			srv := rec.server(t, tc.handler)
			cfg := validConfig()
			cfg.URL = srv.URL + "/v1/payments"
			tl := newTool(t, cfg)
			res := call(t, tl, tool.Call{Caller: tc.caller, Args: json.RawMessage(`{"invoice":"INV-7","amount":1}`), IdempotencyKey: "k1"})
			if res.Status != tc.status {
				t.Fatalf("status = %s, want %s (%+v)", res.Status, tc.status, res)
			}
			switch tc.data {
			case "":
			case "-":
				if res.Data != nil {
					t.Errorf("data = %s, want none", res.Data)
				}
			default:
				if string(res.Data) != tc.data {
					t.Errorf("data = %s, want %s", res.Data, tc.data)
				}
			}
			if tc.errContains != "" && !strings.Contains(res.Error, tc.errContains) {
				t.Errorf("error = %q, want it to contain %q", res.Error, tc.errContains)
			}
			if tc.status != tool.StatusError && res.Error != "" {
				t.Errorf("error = %q on a %s result", res.Error, res.Status)
			}
			if tc.text != "" && !strings.Contains(res.Text, tc.text) {
				t.Errorf("text = %q, want it to contain %q", res.Text, tc.text)
			}
			if rec.count() != 1 {
				t.Errorf("endpoint received %d requests, want exactly 1 (no retries, no redirects)", rec.count())
			}
		})
	}
}

func TestTimeoutIsAnErrorNotNotFound(t *testing.T) {
	release := make(chan struct{})
	var rec recorder
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		w.WriteHeader(404)
	})
	defer close(release) // runs before srv.Close, so the handler is not left waiting

	cfg := validConfig()
	cfg.URL, cfg.Timeout = srv.URL, 50*time.Millisecond
	tl := newTool(t, cfg)
	start := time.Now()
	res := call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(`{}`), IdempotencyKey: "k1"})
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("call took %s with a 50ms timeout", elapsed)
	}
	if res.Status != tool.StatusError {
		t.Fatalf("status = %s, want error", res.Status)
	}
	if !strings.Contains(res.Error, "did not answer within 50ms") || !strings.Contains(res.Error, "outcome is unknown") {
		t.Errorf("error = %q", res.Error)
	}
	if !strings.Contains(res.Text, "unknown") {
		t.Errorf("text = %q, want it to say the outcome is unknown", res.Text)
	}

	// A deadline from the caller's context is a timeout too.
	cfg.Timeout, cfg.Risk = 0, tool.RiskRead
	tl = newTool(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := tl.Call(ctx, tool.Call{Caller: olga, Args: json.RawMessage(`{}`)})
	if err != nil || res.Status != tool.StatusError || !strings.Contains(res.Error, "did not answer") || strings.Contains(res.Error, "outcome") {
		t.Errorf("context deadline: %+v, %v", res, err)
	}
}

func TestCancelledCallIsAnError(t *testing.T) {
	started := make(chan struct{})
	var rec recorder
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	cfg := validConfig()
	cfg.URL = srv.URL
	tl := newTool(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	res, err := tl.Call(ctx, tool.Call{Caller: olga, Args: json.RawMessage(`{}`)})
	if err != nil || res.Status != tool.StatusError || !strings.Contains(res.Error, "cancelled") {
		t.Errorf("cancelled call: %+v, %v", res, err)
	}
}

func TestUnreachableEndpointIsAnError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more

	cfg := validConfig()
	cfg.URL = addr + "/pay?token=q-secret-42424242"
	tl := newTool(t, cfg)
	res := call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(`{}`)})
	if res.Status != tool.StatusError || !strings.Contains(res.Error, "could not reach the endpoint") {
		t.Fatalf("unreachable: %+v", res)
	}
	if strings.Contains(res.Error, "outcome is unknown") {
		t.Errorf("a refused connection sent nothing, but the error says the outcome is unknown: %q", res.Error)
	}
	if strings.Contains(res.Error, "q-secret") || strings.Contains(res.Error, "/pay") {
		t.Errorf("error %q quotes the URL", res.Error)
	}
}

func TestLargeAnswerIsCutAndMarked(t *testing.T) {
	const limit = 512
	big := `{"items":[` + strings.Repeat(`{"id":"item-0001","name":"Договор"},`, 100) + `{}]}`
	escapes := strings.Repeat("\x01", 400) // 400 bytes, but 2400 once encoded as a JSON string
	cases := map[string]struct{ contentType, body string }{
		"json over the limit":      {"application/json", big},
		"text encoding over limit": {"text/plain", escapes},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var rec recorder
			srv := rec.server(t, reply(200, tc.contentType, tc.body))
			cfg := validConfig()
			cfg.URL, cfg.MaxResultBytes = srv.URL, limit
			tl := newTool(t, cfg)
			res := call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(`{}`)})
			if res.Status != tool.StatusOK {
				t.Fatalf("status = %s", res.Status)
			}
			if len(res.Data) > limit {
				t.Errorf("data is %d bytes, over the limit of %d", len(res.Data), limit)
			}
			var m truncated
			if err := json.Unmarshal(res.Data, &m); err != nil {
				t.Fatalf("data %s is not the truncation marker: %v", res.Data, err)
			}
			if !m.Truncated || m.Limit != limit || m.Partial == "" || !strings.HasPrefix(tc.body, m.Partial) {
				t.Errorf("marker = %+v", m)
			}
			if m.Bytes != 0 && m.Bytes != int64(len(tc.body)) {
				t.Errorf("declared size %d, body is %d", m.Bytes, len(tc.body))
			}
		})
	}
}

func TestSecretsNeverLeak(t *testing.T) {
	const (
		token  = "sk-live-SECRET-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" // as long as a JWT
		apiKey = "key/ABCDEFGH+12345"
		user   = "svc-arbiter"
		pass   = "p4ss-w0rd-LONG"
		query  = "q-secret-42424242"
	)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	secrets := []string{token, apiKey, pass, basic, query}

	// Echo everything the endpoint received, in every shape it might.
	echo := func(status int, contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			auth := r.Header.Get("Authorization")
			switch contentType {
			case "application/json":
				json.NewEncoder(w).Encode(map[string]any{
					"message": "you sent " + auth + " and " + r.Header.Get("X-Api-Key") + " via " + r.URL.String(),
					"headers": r.Header,
					"token":   strings.TrimPrefix(auth, "Bearer "),
				})
			default:
				fmt.Fprintf(w, "headers: %v\nurl: %s\n", r.Header, r.URL)
			}
		}
	}
	straddle := func(w http.ResponseWriter, r *http.Request) {
		// A long bearer token straddles the result limit, well inside what fits.
		cred := strings.Fields(r.Header.Get("Authorization"))[1]
		io.WriteString(w, strings.Repeat("a", 420)+cred+strings.Repeat("b", 500))
	}
	handlers := map[string]http.HandlerFunc{
		"200 json":      echo(200, "application/json"),
		"200 text":      echo(200, "text/plain"),
		"404 json":      echo(404, "application/json"),
		"409 json":      echo(409, "application/json"),
		"422 json":      echo(422, "application/json"),
		"400 text":      echo(400, "text/plain"),
		"401 json":      echo(401, "application/json"),
		"418 json":      echo(418, "application/json"),
		"500 text":      echo(500, "text/plain"),
		"cut at secret": straddle,
		"slow":          func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
		"broken body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			io.WriteString(w, `{"token":"`+token+`"`)
		},
	}
	for name, h := range handlers {
		for _, auth := range []string{"Bearer " + token, "Basic " + basic} {
			t.Run(name+" "+strings.Fields(auth)[0], func(t *testing.T) {
				var rec recorder
				srv := rec.server(t, h)
				cfg := validConfig()
				cfg.URL = srv.URL + "/pay?token=" + query
				cfg.Timeout = 100 * time.Millisecond
				cfg.MaxResultBytes = 510
				cfg.Headers = map[string]string{"Authorization": auth, "X-Api-Key": apiKey}
				tl := newTool(t, cfg)
				res, err := tl.Call(context.Background(), tool.Call{Caller: olga, Args: json.RawMessage(`{}`)})
				if err != nil {
					t.Fatalf("Call: %v", err)
				}
				enc, _ := json.Marshal(res)
				for _, s := range secrets {
					if strings.Contains(string(enc), s) || strings.Contains(res.Text+res.Error+string(res.Data), s) {
						t.Errorf("result leaks %q: %s", s, enc)
					}
				}
				for _, s := range secrets {
					if strings.Contains(string(enc), s[:12]) {
						t.Errorf("result leaks the beginning of %q: %s", s, enc)
					}
				}
				if res.Data != nil && !json.Valid(res.Data) {
					t.Errorf("redacted data is not JSON: %s", res.Data)
				}
			})
		}
	}

	// Call-time Go errors do not carry secrets either.
	cfg := validConfig()
	cfg.Headers = map[string]string{"Authorization": "Bearer " + token}
	tl := newTool(t, cfg)
	_, err := tl.Call(context.Background(), tool.Call{Caller: tool.Caller{TenantID: "acme\n" + token}})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("bad caller: err = %v", err)
	}
}

func TestRedactionKeepsJSONData(t *testing.T) {
	const token = "sk-live-SECRET-0123456789abcdef"
	var rec recorder
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"p1","echo":%q}`, r.Header.Get("Authorization"))
	})
	cfg := validConfig()
	cfg.URL = srv.URL
	cfg.Headers = map[string]string{"Authorization": "Bearer " + token, "Accept": "application/vnd.pay+json"}
	tl := newTool(t, cfg)
	res := call(t, tl, tool.Call{Caller: olga, Args: json.RawMessage(`{}`)})
	if want := `{"id":"p1","echo":"[redacted]"}`; string(res.Data) != want {
		t.Errorf("data = %s, want %s", res.Data, want)
	}
	if got := rec.last(t).header.Get("Accept"); got != "application/vnd.pay+json" {
		t.Errorf("static Accept replaced: %q", got)
	}
}

// TestIdempotentBackendAppliesKeyOnce documents the contract an Idempotent
// endpoint promises and the engine relies on when it repeats a call whose
// outcome is unknown: the tool sends the same key, the endpoint applies it
// once and answers the repeat with the first outcome.
func TestIdempotentBackendAppliesKeyOnce(t *testing.T) {
	var mu sync.Mutex
	applied := map[string]string{}
	var charges atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		defer mu.Unlock()
		out, done := applied[key]
		if !done {
			out = fmt.Sprintf(`{"payment":"pay-%d","message":"charged"}`, charges.Add(1))
			applied[key] = out
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, out)
	}))
	defer srv.Close()

	cfg := validConfig()
	cfg.URL, cfg.Idempotent = srv.URL, true
	tl := newTool(t, cfg)
	c := tool.Call{Caller: olga, Args: json.RawMessage(`{"invoice":"INV-7","amount":10}`), IdempotencyKey: "act-1"}
	first, second := call(t, tl, c), call(t, tl, c)
	if charges.Load() != 1 || string(first.Data) != string(second.Data) {
		t.Errorf("charges = %d, answers %s / %s: want one charge and the same answer", charges.Load(), first.Data, second.Data)
	}
}

func TestConcurrentCalls(t *testing.T) {
	var rec recorder
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"key":%q}`, r.Header.Get("Idempotency-Key"))
	})
	cfg := validConfig()
	cfg.URL = srv.URL
	tl := newTool(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", i)
			res, err := tl.Call(context.Background(), tool.Call{Caller: olga, Args: json.RawMessage(`{}`), IdempotencyKey: key})
			if err != nil || string(res.Data) != fmt.Sprintf(`{"key":%q}`, key) {
				errs <- errors.New(key + ": " + string(res.Data))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
