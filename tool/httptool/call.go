package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// userAgent identifies the tool to endpoints unless Headers set one.
const userAgent = "arbiter-httptool"

// Call sends one request and maps the answer onto a Result; it is safe for
// concurrent use.
//
// The request carries the arguments as given (a JSON body; query
// parameters for GET), the static headers, Idempotency-Key when the call
// has a key, and X-Arbiter-Tenant / X-Arbiter-User from the caller. The
// call is bounded by the tool's timeout as well as ctx.
//
// Every outcome of a request that was attempted is a Result: 2xx is ok with
// the body as Data; 404 is not found; 409, 400, 422, 401, 403, 429, 5xx,
// redirects, timeouts and network failures are errors with an English
// Error for the model and a Text in the caller's language (Russian unless
// it is English) for the reply. Calls are never retried here. The Go error
// is non-nil only when the request cannot be built: the caller has no
// tenant, or an identity or key value holds control characters.
func (t *Tool) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	if c.Caller.TenantID == "" {
		return tool.Result{}, fmt.Errorf("httptool %s: call: caller has no tenant id", t.spec.Name)
	}
	for _, h := range [...]struct{ name, value string }{
		{HeaderTenant, c.Caller.TenantID}, {HeaderUser, c.Caller.UserID}, {HeaderIdempotencyKey, c.IdempotencyKey},
	} {
		if !validHeaderValue(h.value) {
			return tool.Result{}, fmt.Errorf("httptool %s: call: %s holds control characters", t.spec.Name, h.name)
		}
	}

	args := bytes.TrimSpace(c.Args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return t.failure(c.Caller, "invalid arguments: must be a JSON object",
			"Некорректные аргументы действия.", "Invalid action arguments."), nil
	}

	target, body := t.url, args
	if t.method == http.MethodGet {
		u, problem := t.queryURL(args)
		if problem != "" {
			return t.failure(c.Caller, "invalid arguments: "+problem,
				"Некорректные аргументы действия.", "Invalid action arguments."), nil
		}
		target, body = u, nil
	}

	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	resp, err := t.send(ctx, t.method, target, body, c)
	if err != nil {
		var build buildError
		if errors.As(err, &build) {
			return tool.Result{}, err
		}
		return t.transportFailure(ctx, c.Caller, err), nil
	}
	defer func() {
		// Drain a little so the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
	}()
	return t.mapResponse(ctx, c.Caller, resp), nil
}

// buildError is a request that could not be built (a bug or a
// misconfiguration, not a failure of the endpoint).
type buildError struct{ error }

// send makes one request of the endpoint at target with body (JSON, or
// none), the static headers, the caller's tenant and user and the call's
// idempotency key.
func (t *Tool) send(ctx context.Context, method string, target *url.URL, body []byte, c tool.Call) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), rd)
	if err != nil {
		return nil, buildError{fmt.Errorf("httptool %s: build request: %s", t.spec.Name, t.secrets.string(err.Error()))}
	}
	for name, values := range t.headers {
		req.Header[name] = append([]string(nil), values...)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.IdempotencyKey != "" {
		req.Header.Set(HeaderIdempotencyKey, c.IdempotencyKey)
	}
	req.Header.Set(HeaderTenant, c.Caller.TenantID)
	if c.Caller.UserID != "" {
		req.Header.Set(HeaderUser, c.Caller.UserID)
	}

	return t.client.Do(req)
}

// queryURL returns the endpoint URL with the arguments added to its query,
// or a problem when an argument is not a scalar. Null arguments are left
// out.
func (t *Tool) queryURL(args []byte) (*url.URL, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, "arguments must be a JSON object"
	}
	q := t.url.Query()
	for name, raw := range obj {
		raw = bytes.TrimSpace(raw)
		switch {
		case string(raw) == "null":
		case raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Sprintf("argument %q is not a valid string", name)
			}
			q.Add(name, s)
		case raw[0] == '{' || raw[0] == '[':
			return nil, fmt.Sprintf("argument %q is not a string, number or boolean; GET sends arguments as query parameters", name)
		default: // number, true, false: their JSON text is the parameter
			q.Add(name, string(raw))
		}
	}
	u := *t.url
	u.RawQuery = q.Encode()
	return &u, ""
}

// mapResponse turns an HTTP answer into a Result.
func (t *Tool) mapResponse(ctx context.Context, c tool.Caller, resp *http.Response) tool.Result {
	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		body, over, err := t.secrets.readBody(resp.Body, t.maxBytes)
		if err != nil {
			return t.failure(c, fmt.Sprintf("the endpoint answered with status %d but the answer could not be read: %s", code, t.causeText(ctx, err)),
				"Сервис принял запрос, но ответ оборвался — проверьте результат.",
				"The service accepted the request but its answer was cut off; check the result.")
		}
		data, cut := resultData(body, over, resp.ContentLength, t.maxBytes)
		res := tool.Result{Status: tool.StatusOK, Data: data, Source: t.spec.Name, ObservedAt: time.Now()}
		if !cut {
			res.Text = successText(body)
		}
		return res
	}

	// The body of any other answer is read for its explanation only.
	body, _, err := t.secrets.readBody(resp.Body, errorBodyLimit)
	if err != nil {
		body = nil
	}
	msg := errorMessage(body, resp.Header.Get("Content-Type"))
	withMsg := func(s string) string {
		if msg != "" {
			return s + ": " + msg
		}
		return s
	}
	orMsg := func(text string) string {
		if msg != "" {
			return msg
		}
		return text
	}
	switch {
	case code == http.StatusNotFound:
		res := tool.Result{Status: tool.StatusNotFound, Source: t.spec.Name, ObservedAt: time.Now(),
			Text: orMsg(tr(c, "Сервис не нашёл запрошенное.", "The service found nothing for this request."))}
		res.Data = t.errorData(body)
		return res
	case code == http.StatusConflict:
		res := t.failure(c, withMsg("conflict"), "", "")
		res.Text = orMsg(tr(c, "Запрос противоречит текущему состоянию в сервисе.", "The request conflicts with the current state of the service."))
		res.Data = t.errorData(body)
		return res
	case code == http.StatusBadRequest || code == http.StatusUnprocessableEntity:
		res := t.failure(c, withMsg(fmt.Sprintf("rejected by the endpoint (status %d)", code)), "", "")
		res.Text = orMsg(tr(c, "Сервис отклонил запрос.", "The service rejected the request."))
		res.Data = t.errorData(body)
		return res
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return t.failure(c, fmt.Sprintf("the endpoint refused the credentials (status %d)", code),
			"Сервис отклонил учётные данные инструмента — нужно проверить его настройку.",
			"The service refused the tool's credentials; its configuration needs checking.")
	case code == http.StatusTooManyRequests || code >= 500 && code <= 599:
		e := fmt.Sprintf("temporarily unavailable (status %d); the call is not retried automatically", code)
		if wait := retryAfter(resp.Header); wait > 0 {
			e += fmt.Sprintf("; the endpoint asks to wait %s", wait)
		}
		res := t.failure(c, withMsg(e),
			fmt.Sprintf("Сервис временно недоступен (%d). Повторять автоматически не буду — попробуйте позже.", code),
			fmt.Sprintf("The service is temporarily unavailable (%d). It is not retried automatically; try again later.", code))
		// A server error may come after the write took effect; 429 and 503
		// say it was not taken on.
		res.OutcomeUnknown = t.spec.Risk.Writes() && code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable
		return res
	case code >= 300 && code <= 399:
		return t.failure(c, fmt.Sprintf("the endpoint answered with a redirect (status %d), which is not followed", code),
			"Сервис ответил перенаправлением — инструмент настроен неверно.",
			"The service answered with a redirect; the tool is misconfigured.")
	default:
		return t.failure(c, withMsg(fmt.Sprintf("unexpected status %d from the endpoint", code)),
			fmt.Sprintf("Сервис ответил ошибкой (%d).", code),
			fmt.Sprintf("The service answered with an error (%d).", code))
	}
}

// errorData is the JSON body of a client-error answer, kept so the model can
// see what the endpoint objected to; nil for other bodies or when it does
// not fit.
func (t *Tool) errorData(body []byte) json.RawMessage {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || len(body) > t.maxBytes || !json.Valid(body) {
		return nil
	}
	return body
}

// transportFailure maps a failed request (no HTTP answer) onto an error
// Result: a timeout is an error, never not found. For writes it says
// whether the request may have been applied.
func (t *Tool) transportFailure(ctx context.Context, c tool.Caller, err error) tool.Result {
	unsent := notSent(err)
	var res tool.Result
	switch {
	case isTimeout(ctx, err):
		res = t.failure(c, fmt.Sprintf("the endpoint did not answer within %s", t.timeout),
			"Сервис не ответил вовремя.", "The service did not answer in time.")
	case errors.Is(err, context.Canceled):
		res = t.failure(c, "the call was cancelled before the endpoint answered",
			"Запрос к сервису прерван.", "The request to the service was interrupted.")
	default:
		res = t.failure(c, "could not reach the endpoint: "+t.causeText(ctx, err),
			"Сервис недоступен.", "The service could not be reached.")
	}
	if t.spec.Risk.Writes() && !unsent {
		res.OutcomeUnknown = true
		res.Error += "; the outcome is unknown"
		res.Text += tr(c, " Выполнено ли действие, неизвестно — проверьте, прежде чем повторять.",
			" Whether the action was applied is unknown; check before repeating.")
	}
	return res
}

// causeText describes err without the request URL (which may hold a
// secret query) and with secrets redacted.
func (t *Tool) causeText(ctx context.Context, err error) string {
	if isTimeout(ctx, err) {
		return fmt.Sprintf("timed out after %s", t.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return t.secrets.string(err.Error())
}

// isTimeout reports whether err comes from the call's deadline or a
// client or network timeout.
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// notSent reports whether err shows the request never left: the name did
// not resolve or the connection was not established.
func notSent(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryAfter reads a Retry-After header given in seconds; 0 if absent or
// not a positive number.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s <= 0 || s > 86400 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// failure is an error Result: errText for the model and the journal, the
// Russian or English text for the reply. Both are redacted.
func (t *Tool) failure(c tool.Caller, errText, ru, en string) tool.Result {
	return tool.Result{
		Status:     tool.StatusError,
		Error:      t.secrets.string(errText),
		Text:       t.secrets.string(tr(c, ru, en)),
		Source:     t.spec.Name,
		ObservedAt: time.Now(),
	}
}

// tr picks the English text for an English-speaking caller, Russian
// otherwise.
func tr(c tool.Caller, ru, en string) string {
	if strings.HasPrefix(strings.ToLower(c.Language), "en") {
		return en
	}
	return ru
}
