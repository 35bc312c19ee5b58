package openaicompat

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// APIError is the error body an OpenAI-compatible API returned with a
// non-2xx status. It is the Err of the *llm.Error that Complete returns for
// such answers, so callers can branch on Code with errors.As. It holds no
// request data (no headers, hence no API key).
type APIError struct {
	Status  int
	Type    string
	Code    string
	Param   string
	Message string
}

func (e *APIError) Error() string {
	s := "chat completion: HTTP " + strconv.Itoa(e.Status)
	if e.Code != "" {
		s += " " + e.Code
	} else if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Error codes and types that mean the account cannot pay, on any 4xx.
var billingCodes = map[string]bool{
	"insufficient_quota":         true,
	"billing_hard_limit_reached": true,
	"billing_not_active":         true,
	"payment_required":           true,
}

// Error codes and types that mean the provider's content policy refused
// the request.
var contentPolicyCodes = map[string]bool{
	"content_filter":               true,
	"content_policy_violation":     true,
	"content_policy":               true,
	"moderation_blocked":           true,
	"responsibleaipolicyviolation": true,
	"invalid_prompt":               true,
}

func isBilling(codes ...string) bool {
	for _, c := range codes {
		c = strings.ToLower(c)
		if billingCodes[c] || strings.HasPrefix(c, "billing") {
			return true
		}
	}
	return false
}

// billingWords, found in a 403's code, type or message, mean the account
// cannot pay rather than lacks permission (e.g. "Your team has no
// credits", "quota exceeded").
var billingWords = []string{"quota", "billing", "credit", "payment"}

func mentionsBilling(texts ...string) bool {
	for _, t := range texts {
		t = strings.ToLower(t)
		for _, w := range billingWords {
			if strings.Contains(t, w) {
				return true
			}
		}
	}
	return false
}

func isContentPolicy(codes ...string) bool {
	for _, c := range codes {
		if contentPolicyCodes[strings.ToLower(c)] {
			return true
		}
	}
	return false
}

// classify turns a failed call into an *llm.Error. ctx is the caller's
// context, callCtx the one bounded by Config.Timeout, resp the HTTP
// response if one arrived.
func (p *Provider) classify(ctx, callCtx context.Context, resp *http.Response, err error) *llm.Error {
	if kind, msg, ok := wire.Interrupted(ctx, callCtx, p.timeout); ok {
		return p.newError(kind, msg, wire.RedactErr(err, p.apiKey))
	}

	var ae *APIError
	if errors.As(err, &ae) {
		ae.Message = wire.Redact(ae.Message, p.apiKey)
		return p.statusError(ae, resp)
	}

	kind, msg, cause := wire.Transport(err, resp, p.apiKey)
	e := p.newError(kind, msg, cause)
	if resp != nil {
		e.Status = resp.StatusCode
	}
	return e
}

// errorBody reads an error status's body: the OpenAI error object
// {"error":{"message","type","code","param"}}, or the shapes other
// compatible servers use — {"error":"text"} (Ollama), {"message","type",
// "code"} at the top level (vLLM), {"detail":"text"} (FastAPI). Anything
// else gives just the status.
func errorBody(resp *http.Response) *APIError {
	ae := &APIError{Status: resp.StatusCode}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil || len(data) == 0 || data[0] != '{' {
		return ae
	}
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(data, &body) != nil {
		return ae
	}
	var object struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   *string         `json:"param"`
	}
	var text string
	switch {
	case json.Unmarshal(body.Error, &object) == nil && (object.Message != "" || object.Type != "" || len(object.Code) > 0 && string(object.Code) != "null"):
		ae.Message, ae.Type, ae.Code = object.Message, object.Type, codeText(object.Code)
		if object.Param != nil {
			ae.Param = *object.Param
		}
	case json.Unmarshal(body.Error, &text) == nil && text != "":
		ae.Message = text
	case body.Message != "":
		ae.Message, ae.Type = body.Message, body.Type
		_ = json.Unmarshal(body.Code, &ae.Code) // a string code; numeric ones are dropped
	case json.Unmarshal(body.Detail, &text) == nil && text != "":
		ae.Message = text
	}
	return ae
}

// codeText is an error object's code: a string as it is, a number in
// digits (some compatible servers send numeric codes), null as none.
func codeText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// statusError classifies an error status with its decoded body.
func (p *Provider) statusError(ae *APIError, resp *http.Response) *llm.Error {
	status := ae.Status
	e := p.newError(llm.ErrBadRequest, ae.Message, ae)
	e.Status = status
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	switch {
	case status >= 400 && status < 500 && isBilling(ae.Code, ae.Type):
		e.Kind = llm.ErrBilling
	case status == http.StatusForbidden && mentionsBilling(ae.Code, ae.Type, ae.Message):
		e.Kind = llm.ErrBilling
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = llm.ErrAuth
	case status == http.StatusPaymentRequired:
		e.Kind = llm.ErrBilling
	case status == http.StatusTooManyRequests:
		e.Kind = llm.ErrRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		e.Kind = llm.ErrTransient
	case status >= 400 && isContentPolicy(ae.Code, ae.Type):
		e.Kind = llm.ErrContentPolicy
	default:
		e.Kind = llm.ErrBadRequest
	}
	if resp != nil && (e.Kind == llm.ErrRateLimited || e.Kind == llm.ErrTransient) {
		e.RetryAfter = wire.RetryAfter(resp.Header, time.Now())
	}
	return e
}
