package httptool

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

const paySchema = `{
  "type": "object",
  "properties": {
    "invoice": {"type": "string"},
    "amount": {"type": "number"},
    "meta": {"type": "object"}
  },
  "required": ["invoice", "amount"],
  "additionalProperties": false
}`

const searchSchema = `{
  "type": "object",
  "properties": {
    "q": {"type": "string"},
    "limit": {"type": ["integer", "null"]},
    "exact": {"type": "boolean"},
    "sort": {"enum": ["asc", "desc"]}
  },
  "additionalProperties": false
}`

func validConfig() Config {
	return Config{
		Name:        "pay_invoice",
		Title:       "Оплатить счёт",
		Description: "Pay an invoice through the payment service.",
		URL:         "https://pay.example/v1/payments",
		InputSchema: json.RawMessage(paySchema),
		Risk:        tool.RiskWriteFull,
		Headers:     map[string]string{"Authorization": "Bearer sk-live-0123456789"},
	}
}

func TestNewDefaultsAndSpec(t *testing.T) {
	cfg := validConfig()
	cfg.Idempotent = true
	tl, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	s := tl.Spec()
	if s.Name != "pay_invoice" || s.Title != "Оплатить счёт" || s.Risk != tool.RiskWriteFull || !s.Idempotent {
		t.Errorf("spec = %+v", s)
	}
	if s.Confirm != tool.ConfirmNever || s.Timeout != tool.DefaultTimeout || s.MaxResultBytes != tool.DefaultMaxResultBytes {
		t.Errorf("defaults not applied: confirm %q timeout %s max %d", s.Confirm, s.Timeout, s.MaxResultBytes)
	}
	if tl.method != http.MethodPost {
		t.Errorf("method = %s, want POST", tl.method)
	}
	// The spec owns its schema.
	s.InputSchema[0] = 'X'
	if tl.Spec().InputSchema[0] != '{' {
		t.Error("Spec shares its schema with callers")
	}
	if _, err := tool.NewRegistry(tl); err != nil {
		t.Errorf("registry rejects the tool: %v", err)
	}

	cfg = validConfig()
	cfg.Method = "get"
	cfg.InputSchema = json.RawMessage(searchSchema)
	cfg.Timeout, cfg.MaxResultBytes, cfg.Confirm = 3*time.Second, 1024, tool.ConfirmAlways
	tl, err = New(cfg)
	if err != nil {
		t.Fatalf("New GET: %v", err)
	}
	if s := tl.Spec(); tl.method != http.MethodGet || s.Timeout != 3*time.Second || s.MaxResultBytes != 1024 || s.Confirm != tool.ConfirmAlways {
		t.Errorf("GET tool: method %s spec %+v", tl.method, s)
	}
}

func TestNewRejectsBadConfigs(t *testing.T) {
	const secret = "sk-live-0123456789"
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"empty name", func(c *Config) { c.Name = "" }, "name must start"},
		{"bad name", func(c *Config) { c.Name = "pay invoice" }, "name must start"},
		{"no description", func(c *Config) { c.Description = " " }, "description is required"},
		{"no URL", func(c *Config) { c.URL = "" }, "URL is required"},
		{"relative URL", func(c *Config) { c.URL = "/v1/payments" }, "scheme http or https"},
		{"ftp URL", func(c *Config) { c.URL = "ftp://pay.example/x" }, "scheme http or https"},
		{"no host", func(c *Config) { c.URL = "https:///x" }, "no host"},
		{"credentials in URL", func(c *Config) { c.URL = "https://user:" + secret + "@pay.example/x" }, "user credentials"},
		{"unknown method", func(c *Config) { c.Method = "DELETE" }, "unknown method"},
		{"no schema", func(c *Config) { c.InputSchema = nil }, "input schema is required"},
		{"schema not an object", func(c *Config) { c.InputSchema = json.RawMessage(`{"type":"string"}`) }, "root type"},
		{"schema not JSON", func(c *Config) { c.InputSchema = json.RawMessage(`{"type":`) }, "schema of pay_invoice"},
		{"GET with nested property", func(c *Config) { c.Method = "GET" }, `property "meta"`},
		{"GET with untyped property", func(c *Config) {
			c.Method = "GET"
			c.InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"description":"anything"}}}`)
		}, `property "x"`},
		{"bad risk", func(c *Config) { c.Risk = "write" }, "unknown risk"},
		{"no risk", func(c *Config) { c.Risk = "" }, "unknown risk"},
		{"bad confirm", func(c *Config) { c.Confirm = "sometimes" }, "unknown confirm"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "negative"},
		{"negative limit", func(c *Config) { c.MaxResultBytes = -1 }, "negative"},
		{"header value with CRLF", func(c *Config) { c.Headers = map[string]string{"X-Api-Key": secret + "\r\nX-Evil: 1"} }, "control characters"},
		{"empty header value", func(c *Config) { c.Headers = map[string]string{"Authorization": ""} }, "empty value"},
		{"bad header name", func(c *Config) { c.Headers = map[string]string{"X Api Key": secret} }, "not a valid HTTP token"},
		{"reserved header", func(c *Config) { c.Headers = map[string]string{"content-type": "text/plain"} }, "set by the tool"},
		{"reserved arbiter header", func(c *Config) { c.Headers = map[string]string{"X-Arbiter-Tenant": "acme"} }, "set by the tool"},
		{"header twice", func(c *Config) { c.Headers = map[string]string{"x-api-key": secret, "X-API-KEY": secret} }, "configured twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.mutate(&cfg)
			_, err := New(cfg)
			if err == nil {
				t.Fatal("New accepted the config")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "httptool: new ") {
				t.Errorf("error %q does not name the operation", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q leaks a secret", err)
			}
		})
	}
}

func TestCustomClientKeepsOwnRedirectPolicy(t *testing.T) {
	own := &http.Client{Timeout: time.Minute}
	cfg := validConfig()
	cfg.Client = own
	tl, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if tl.client == own || tl.client.CheckRedirect == nil || own.CheckRedirect != nil {
		t.Error("the tool must use a redirect-refusing copy and leave the given client alone")
	}
	if tl.client.Timeout != time.Minute {
		t.Error("the copy lost the client's settings")
	}
}
