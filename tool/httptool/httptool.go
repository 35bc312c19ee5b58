// Package httptool holds a tool.Tool that calls an operator's HTTP endpoint,
// so a business system (a payment service, a CRM, an internal API) can be
// connected to the engine by configuration rather than code.
//
// One Tool is one endpoint: a name, a description and an input schema for
// the model, a risk and confirmation policy for the engine, and a URL and
// method for the wire. A call sends the validated arguments as a JSON body
// (or as query parameters for GET) together with the caller's tenant and
// user and the engine's idempotency key, and maps the answer onto the
// Result statuses: 2xx is ok, 404 is not found, every other outcome —
// including a timeout or an unreachable endpoint — is an error.
//
// The package does not validate arguments (the registry does that with the
// schema), retry calls, follow redirects, decide on confirmation, or read
// configuration files; it holds no state besides a shared HTTP connection
// pool.
package httptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// Wire header names the tool sets on every request.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderTenant         = "X-Arbiter-Tenant"
	HeaderUser           = "X-Arbiter-User"
)

// Config describes one endpoint as a tool.
type Config struct {
	// Name is the tool name the model calls (letters, digits, '_', '.',
	// '-'; starting with a letter; at most 64).
	Name string
	// Title is the human name used in confirmations; empty means Name.
	Title string
	// Description tells the model what the endpoint does; required.
	Description string
	// URL is the absolute http or https address of the endpoint. It may
	// carry a query; it must not carry user credentials (use Headers).
	URL string
	// Method is POST (the default), PUT, PATCH or GET. GET sends the
	// arguments as query parameters, so it only fits schemas whose
	// properties are scalars (string, number, integer, boolean).
	Method string
	// InputSchema is the JSON Schema of the arguments; the root must be an
	// object. Required.
	InputSchema json.RawMessage
	// Risk is the side-effect level of the endpoint; required.
	Risk tool.Risk
	// Confirm is the confirmation policy; empty means tool.ConfirmNever.
	Confirm tool.Confirm
	// Idempotent declares that the endpoint applies each Idempotency-Key
	// header at most once, so the engine may repeat a call whose outcome
	// is unknown with the same key.
	Idempotent bool
	// Outcomes a reply may assert only after a successful call
	// (tool.Spec.Outcomes); Claims are phrases, their older form
	// (tool.Spec.Claims).
	Outcomes []tool.Outcome
	Claims   []string
	// Receipt names one call in the line the server adds to a reply about
	// it (tool.Spec.Receipt).
	Receipt tool.Localized
	// BoundArgs are the arguments filled from the conversation's case
	// (tool.Spec.BoundArgs).
	BoundArgs []string
	// Sensitive are arguments that say where data goes or what unlocks
	// it (tool.Spec.Sensitive).
	Sensitive []string
	// ExternalResults says the endpoint answers with what others wrote
	// even when it writes (tool.Spec.ExternalResults).
	ExternalResults bool
	// Approve names the roles whose members approve a call
	// (tool.Spec.Approve); Basis the reads an approved call rests on
	// (tool.Spec.Basis).
	Approve []string
	Basis   []string
	// FreshFor is how long a result stands for the current state
	// (tool.Spec.FreshFor); Redact the fields never written down as they
	// are (tool.Spec.Redact).
	FreshFor time.Duration
	Redact   []string
	// Requires names the integration a user must have connected to be
	// shown the tool (tool.Spec.Requires).
	Requires string
	// PrecheckURL, when set, is asked right before an approved write
	// whether it still makes sense (see Tool.Precheck); ReconcileURL
	// whether a write with a given idempotency key took effect (see
	// Tool.Reconcile).
	PrecheckURL  string
	ReconcileURL string
	// Timeout bounds one call, answer included; zero means
	// tool.DefaultTimeout.
	Timeout time.Duration
	// MaxResultBytes caps the Result data; zero means
	// tool.DefaultMaxResultBytes. A larger answer is cut and marked.
	MaxResultBytes int
	// Headers are static request headers (an Authorization token, an API
	// key). Their values never appear in errors or results: the tool does
	// not echo them, and any value of at least 8 bytes (except those of
	// Accept, Accept-Language and User-Agent) that the endpoint echoes
	// back is replaced by "[redacted]".
	Headers map[string]string
	// Client sends the requests; nil means a client shared by all tools of
	// this package with a sized connection pool. The tool uses a copy
	// that never follows redirects, since static headers would travel to
	// the new location.
	Client *http.Client
}

// Tool is an HTTP endpoint as a tool.Tool. It is immutable after New and
// safe for concurrent use.
type Tool struct {
	spec   tool.Spec
	method string
	url    *url.URL
	// precheck and reconcile are Config.PrecheckURL and ReconcileURL,
	// nil when not set.
	precheck, reconcile *url.URL
	headers             http.Header
	client              *http.Client
	timeout             time.Duration
	maxBytes            int
	secrets             *redactor
}

var _ tool.Tool = (*Tool)(nil)

var namePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$`)

// reservedHeaders are set by the tool or the transport and may not be
// configured statically.
var reservedHeaders = map[string]bool{
	"Content-Type":       true,
	"Content-Length":     true,
	"Transfer-Encoding":  true,
	"Connection":         true,
	"Host":               true,
	HeaderIdempotencyKey: true,
	HeaderTenant:         true,
	HeaderUser:           true,
}

// New validates cfg and returns the tool. It rejects a bad name, a URL that
// is not absolute http(s) or carries user credentials, an unknown method,
// a missing or uncompilable schema (and, for GET, one with non-scalar
// properties), an unknown risk or confirmation policy, negative limits and
// empty, malformed or reserved headers; a missing description too. Errors
// never quote header values or the URL, which may hold secrets.
func New(cfg Config) (*Tool, error) {
	if !namePattern.MatchString(cfg.Name) {
		return nil, fmt.Errorf("httptool: new %q: name must start with a letter and hold only letters, digits, '_', '.', '-' (at most 64)", cfg.Name)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("httptool: new %s: "+format, append([]any{cfg.Name}, args...)...)
	}
	if strings.TrimSpace(cfg.Description) == "" {
		return nil, fail("description is required: the model chooses tools by it")
	}
	u, err := parseURL(cfg.URL)
	if err != nil {
		return nil, fail("%v", err)
	}
	var extra [2]*url.URL
	for i, raw := range [2]string{cfg.PrecheckURL, cfg.ReconcileURL} {
		if raw == "" {
			continue
		}
		if extra[i], err = parseURL(raw); err != nil {
			return nil, fail("%s: %v", [2]string{"precheck", "reconcile"}[i], err)
		}
	}
	if len(cfg.Approve) > 0 && !cfg.Risk.Writes() {
		return nil, fail("approve applies to writes only")
	}
	method := strings.ToUpper(strings.TrimSpace(cfg.Method))
	switch method {
	case "":
		method = http.MethodPost
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodGet:
	default:
		return nil, fail("unknown method %q (want POST, PUT, PATCH or GET)", cfg.Method)
	}
	if len(bytes.TrimSpace(cfg.InputSchema)) == 0 {
		return nil, fail("input schema is required")
	}
	if _, err := tool.CompileSchema(cfg.Name, cfg.InputSchema); err != nil {
		return nil, fail("%w", err)
	}
	if method == http.MethodGet {
		if err := checkFlatSchema(cfg.InputSchema); err != nil {
			return nil, fail("GET sends arguments as query parameters: %w", err)
		}
	}
	if !cfg.Risk.Valid() {
		return nil, fail("unknown risk %q (want read, write:safe or write:full)", cfg.Risk)
	}
	confirm := cfg.Confirm
	switch confirm {
	case "":
		confirm = tool.ConfirmNever
	case tool.ConfirmNever, tool.ConfirmAlways:
	default:
		return nil, fail("unknown confirm policy %q (want never or always)", cfg.Confirm)
	}
	if cfg.Timeout < 0 {
		return nil, fail("timeout %s is negative", cfg.Timeout)
	}
	if cfg.MaxResultBytes < 0 {
		return nil, fail("max result bytes %d is negative", cfg.MaxResultBytes)
	}
	headers, err := checkHeaders(cfg.Headers)
	if err != nil {
		return nil, fail("%w", err)
	}

	t := &Tool{
		method:   method,
		url:      u,
		headers:  headers,
		client:   clientFor(cfg.Client),
		timeout:  cfg.Timeout,
		maxBytes: cfg.MaxResultBytes,
		secrets:  newRedactor(headers, u),
	}
	if t.timeout == 0 {
		t.timeout = tool.DefaultTimeout
	}
	if t.maxBytes == 0 {
		t.maxBytes = tool.DefaultMaxResultBytes
	}
	t.precheck, t.reconcile = extra[0], extra[1]
	t.spec = tool.Spec{
		Name:        cfg.Name,
		Title:       cfg.Title,
		Description: cfg.Description,
		InputSchema: bytes.Clone(cfg.InputSchema),
		Receipt:     maps.Clone(cfg.Receipt),
		Policy:      tool.Policy{Risk: cfg.Risk, Confirm: confirm, Timeout: t.timeout, MaxResultBytes: t.maxBytes, Idempotent: cfg.Idempotent, Outcomes: slices.Clone(cfg.Outcomes), Claims: slices.Clone(cfg.Claims), BoundArgs: slices.Clone(cfg.BoundArgs), Sensitive: slices.Clone(cfg.Sensitive), ExternalResults: cfg.ExternalResults, Approve: slices.Clone(cfg.Approve), Basis: slices.Clone(cfg.Basis), FreshFor: cfg.FreshFor, Redact: slices.Clone(cfg.Redact), Requires: cfg.Requires},
	}
	return t, nil
}

// Spec describes the tool with its effective limits. The returned schema
// is a copy.
func (t *Tool) Spec() tool.Spec {
	s := t.spec
	s.InputSchema = bytes.Clone(t.spec.InputSchema)
	return s
}

// parseURL accepts an absolute http(s) URL without user credentials or a
// fragment. Its errors do not quote the URL.
func parseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("URL is required")
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errors.New("URL does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("URL must be absolute with scheme http or https")
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, errors.New("URL has no host")
	}
	if u.User != nil {
		return nil, errors.New("URL must not carry user credentials; put them in Headers")
	}
	if u.Fragment != "" {
		return nil, errors.New("URL must not carry a fragment")
	}
	return u, nil
}

// checkHeaders canonicalizes static header names and rejects malformed
// names, empty or malformed values (an unset secret shows up as an empty
// value) and headers the tool sets itself. Errors name the header,
// never its value.
func checkHeaders(in map[string]string) (http.Header, error) {
	h := make(http.Header, len(in))
	for name, value := range in {
		if !validToken(name) {
			return nil, fmt.Errorf("header name %q is not a valid HTTP token", name)
		}
		canon := http.CanonicalHeaderKey(name)
		if reservedHeaders[canon] {
			return nil, fmt.Errorf("header %s is set by the tool and cannot be configured", canon)
		}
		if _, dup := h[canon]; dup {
			return nil, fmt.Errorf("header %s is configured twice", canon)
		}
		if strings.TrimSpace(value) == "" {
			return nil, fmt.Errorf("header %s has an empty value", canon)
		}
		if !validHeaderValue(value) {
			return nil, fmt.Errorf("header %s has a value with control characters", canon)
		}
		h.Set(canon, value)
	}
	return h, nil
}

// validToken reports whether s is an HTTP token (RFC 9110, section 5.6.2).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s holds no control characters other
// than a horizontal tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// scalarTypes are the JSON Schema types a query parameter can carry.
var scalarTypes = map[string]bool{"string": true, "number": true, "integer": true, "boolean": true, "null": true}

// checkFlatSchema requires every declared property (and additionalProperties
// when it is a schema) to describe a scalar by "type", "enum" or "const".
func checkFlatSchema(raw json.RawMessage) error {
	var root struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	for name, prop := range root.Properties {
		if !scalarSchema(prop) {
			return fmt.Errorf("property %q must be a string, number, integer or boolean", name)
		}
	}
	if ap := bytes.TrimSpace(root.AdditionalProperties); len(ap) > 0 && ap[0] == '{' && !scalarSchema(ap) {
		return errors.New("additionalProperties must describe a string, number, integer or boolean")
	}
	return nil
}

func scalarSchema(raw json.RawMessage) bool {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	switch {
	case len(s.Type) > 0:
		var one string
		if json.Unmarshal(s.Type, &one) == nil {
			return scalarTypes[one]
		}
		var many []string
		if json.Unmarshal(s.Type, &many) != nil || len(many) == 0 {
			return false
		}
		for _, t := range many {
			if !scalarTypes[t] {
				return false
			}
		}
		return true
	case len(s.Enum) > 0:
		for _, v := range s.Enum {
			if !scalarJSON(v) {
				return false
			}
		}
		return true
	case len(s.Const) > 0:
		return scalarJSON(s.Const)
	}
	return false
}

// scalarJSON reports whether v is a JSON string, number, boolean or null.
func scalarJSON(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] != '{' && v[0] != '['
}

// sharedClient is used by every tool configured without a client, so they
// share one connection pool.
var sharedClient = sync.OnceValue(func() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   32,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: refuseRedirect,
	}
})

// clientFor returns the shared client, or a copy of c that does not follow
// redirects.
func clientFor(c *http.Client) *http.Client {
	if c == nil {
		return sharedClient()
	}
	cp := *c
	cp.CheckRedirect = refuseRedirect
	return &cp
}

// refuseRedirect makes the client return a redirect response as is.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
