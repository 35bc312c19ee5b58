package httptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// An HTTP tool may name two more endpoints of its system for writes that
// wait for approval: one that checks, right before the write, that it
// still makes sense (Config.PrecheckURL), and one that says whether a
// write with a given idempotency key took effect (Config.ReconcileURL).
// Both get the call's arguments as a JSON body and the same headers as
// the write.

var (
	_ tool.Prechecker = (*Tool)(nil)
	_ tool.Reconciler = (*Tool)(nil)
)

// Precheck asks the precheck endpoint whether the call may go ahead: a
// 2xx answer says yes; 409, 412 or 422 say no, with the answer's message
// as the reason; anything else (or no answer) means it could not be
// checked, which also stops the write. Without a precheck endpoint every
// call may go ahead.
func (t *Tool) Precheck(ctx context.Context, c tool.Call) error {
	if t.precheck == nil {
		return nil
	}
	code, body, err := t.ask(ctx, t.precheck, c)
	switch {
	case err != nil:
		return fmt.Errorf("could not check: %w", err)
	case code >= 200 && code <= 299:
		return nil
	case code == http.StatusConflict || code == http.StatusPreconditionFailed || code == http.StatusUnprocessableEntity:
		if msg := errorMessage(body, "application/json"); msg != "" {
			return errors.New(msg)
		}
		return fmt.Errorf("the precondition does not hold (status %d)", code)
	}
	return fmt.Errorf("could not check: status %d", code)
}

// Reconcile asks the reconcile endpoint whether the write with the call's
// idempotency key took effect: 200 says it did (its answer as Data), 404
// that it did not; anything else is an error — nothing can tell.
func (t *Tool) Reconcile(ctx context.Context, c tool.Call) (tool.Result, error) {
	if t.reconcile == nil {
		return tool.Result{}, fmt.Errorf("no reconcile endpoint is configured: %w", tool.ErrNoReadBack)
	}
	if c.IdempotencyKey == "" {
		return tool.Result{}, errors.New("reconcile: the call has no idempotency key")
	}
	code, body, err := t.ask(ctx, t.reconcile, c)
	switch {
	case err != nil:
		return tool.Result{}, err
	case code == http.StatusOK:
		data, _ := resultData(body, false, int64(len(body)), t.maxBytes)
		return tool.Result{Status: tool.StatusOK, Data: data, Source: t.spec.Name, ObservedAt: time.Now()}, nil
	case code == http.StatusNotFound:
		return tool.Result{Status: tool.StatusNotFound, Source: t.spec.Name, ObservedAt: time.Now()}, nil
	}
	return tool.Result{}, fmt.Errorf("reconcile: status %d", code)
}

// ask POSTs the call's arguments to target and returns the status and
// the start of the answer.
func (t *Tool) ask(ctx context.Context, target *url.URL, c tool.Call) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	args := c.Args
	if len(args) == 0 {
		args = []byte("{}")
	}
	resp, err := t.send(ctx, http.MethodPost, target, args, c)
	if err != nil {
		return 0, nil, errors.New(t.causeText(ctx, err))
	}
	defer resp.Body.Close()
	body, _, err := t.secrets.readBody(resp.Body, t.maxBytes)
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer: %s", t.causeText(ctx, err))
	}
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	return resp.StatusCode, body, nil
}
