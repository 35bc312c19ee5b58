package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/llm/internal/wire"
)

// APIError is the error the Messages API returned: the body
// {"type":"error","error":{"type","message","details":{"error_code"}}} of
// an answer with an error status (or, rarely, of a 2xx answer, with Status
// 0). It is the Err of the *llm.Error that Complete returns for such
// answers, so callers can branch on Type or Code with errors.As. It holds no
// request data (no headers, hence no API key).
type APIError struct {
	Status int
	// Type is error.type: invalid_request_error, authentication_error,
	// billing_error, permission_error, not_found_error, request_too_large,
	// rate_limit_error, timeout_error, api_error, overloaded_error, ...
	Type string
	// Code is error.details.error_code, when the API gives one.
	Code      string
	Message   string
	RequestID string
}

func (e *APIError) Error() string {
	s := "messages"
	if e.Status != 0 {
		s += ": HTTP " + strconv.Itoa(e.Status)
	} else {
		s += ": error in answer body"
	}
	switch {
	case e.Code != "":
		s += " " + e.Code
	case e.Type != "":
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// Error codes (error.details.error_code) that mean the account cannot pay
// or has reached a spend limit, whatever the status.
var billingCodes = map[string]bool{
	"linked_organization_billing_unavailable": true,
	"linked_organization_spend_limit_reached": true,
	"user_profile_billing_not_authorized":     true,
	"user_profile_not_billable":               true,
	"contract_spend_limit_reached":            true,
	"enforced_spend_limit_reached":            true,
}

// billingPhrases mark an error message about credit or billing; the API
// reports an exhausted credit balance as a 400 invalid_request_error.
var billingPhrases = []string{"credit balance", "purchase credits", "billing", "spend limit", "usage limit", "insufficient credit"}

func isBillingMessage(msg string) bool {
	msg = strings.ToLower(msg)
	for _, p := range billingPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// errorKind classifies an API error. status is 0 for an error object in a
// 2xx answer, which is then classified by its type alone.
func errorKind(ae *APIError) llm.ErrorKind {
	status := ae.Status
	switch {
	case status == http.StatusUnauthorized:
		return llm.ErrAuth
	case ae.Type == "billing_error" || billingCodes[ae.Code] || status == http.StatusPaymentRequired,
		(status == http.StatusBadRequest || status == http.StatusForbidden) && isBillingMessage(ae.Message):
		return llm.ErrBilling
	case status == http.StatusForbidden || ae.Code == "organization_on_hold":
		return llm.ErrAuth
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return llm.ErrTransient
	case status != 0:
		return llm.ErrBadRequest
	}
	switch ae.Type {
	case "authentication_error", "permission_error":
		return llm.ErrAuth
	case "rate_limit_error":
		return llm.ErrRateLimited
	case "invalid_request_error", "not_found_error", "request_too_large":
		return llm.ErrBadRequest
	default: // api_error, overloaded_error, timeout_error, unknown
		return llm.ErrTransient
	}
}

// apiError turns an API error into an *llm.Error; resp, if not nil, gives
// the Retry-After headers.
func (p *Provider) apiError(ae *APIError, resp *http.Response) *llm.Error {
	e := p.newError(errorKind(ae), ae.Message, ae)
	e.Status = ae.Status
	if e.Message == "" {
		switch {
		case ae.Status != 0:
			e.Message = http.StatusText(ae.Status)
		case ae.Type != "":
			e.Message = ae.Type
		default:
			e.Message = "error in answer body"
		}
	}
	if resp != nil && (e.Kind == llm.ErrRateLimited || e.Kind == llm.ErrTransient) {
		e.RetryAfter = wire.RetryAfter(resp.Header, time.Now())
	}
	return e
}

// classify turns a failed SDK call into an *llm.Error. ctx is the caller's
// context, callCtx the one bounded by Config.Timeout, resp the HTTP
// response if one arrived.
func (p *Provider) classify(ctx, callCtx context.Context, resp *http.Response, err error) *llm.Error {
	if kind, msg, ok := wire.Interrupted(ctx, callCtx, p.timeout); ok {
		return p.newError(kind, msg, wire.RedactErr(err, p.apiKey))
	}

	var sdkErr *anthropic.Error
	if errors.As(err, &sdkErr) {
		// The SDK's error keeps the request, headers included; only the
		// parts of the body are carried on.
		ae := &APIError{Status: sdkErr.StatusCode, Type: string(sdkErr.Type()), Code: string(sdkErr.ErrorCode()),
			Message: wire.Redact(sdkErr.Message, p.apiKey), RequestID: sdkErr.RequestID}
		return p.apiError(ae, sdkErr.Response)
	}
	if resp != nil && resp.StatusCode >= 400 {
		// An error status whose body could not be read.
		return p.apiError(&APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("Request-Id")}, resp)
	}

	kind, msg, cause := wire.Transport(err, resp, p.apiKey)
	e := p.newError(kind, msg, cause)
	if resp != nil {
		e.Status = resp.StatusCode
	}
	return e
}
