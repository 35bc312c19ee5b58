package app

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/arbiterhq/arbiter/internal/config"
	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/httptool"
)

// newHTTPTool builds a configured HTTP tool.
func newHTTPTool(h config.HTTPTool, getenv func(string) string) (tool.Tool, error) {
	schema, err := json.Marshal(h.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input_schema: %w", h.Name, err)
	}
	headers := map[string]string{}
	for k, v := range h.Headers {
		headers[k] = v
	}
	for k, env := range h.HeadersEnv {
		headers[k] = getenv(env)
	}
	confirm := tool.Confirm(h.Confirm)
	if confirm == "" {
		// A write to an operator's endpoint is confirmed unless the
		// configuration says otherwise.
		confirm = tool.ConfirmNever
		if tool.Risk(h.Risk).Writes() {
			confirm = tool.ConfirmAlways
		}
	}
	t, err := httptool.New(httptool.Config{
		Name: h.Name, Title: h.Title, Description: h.Description,
		URL: h.URL, Method: h.Method, InputSchema: schema,
		Risk: tool.Risk(h.Risk), Confirm: confirm, Idempotent: h.Idempotent,
		Timeout: time.Duration(h.Timeout), Headers: headers,
	})
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", h.Name, err)
	}
	return t, nil
}
