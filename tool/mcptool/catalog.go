package mcptool

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/arbiterhq/arbiter/tool"
)

// Limits on server-provided text shown to the model or the user.
const (
	maxDescription = 1024
	maxTitle       = 80
	maxNameLen     = 64
)

// ToolInfo describes one tool of a server as the policy sees it.
type ToolInfo struct {
	Server string `json:"server"`
	// Name is the server's name for the tool.
	Name string `json:"name"`
	// Exposed is the tool.Tool name ("<server>.<tool>") and Resolved the
	// name the "mcp" action resolves to ("mcp:<server>/<tool>"); both are
	// empty for a hidden tool.
	Exposed  string       `json:"exposed,omitempty"`
	Resolved string       `json:"resolved,omitempty"`
	Title    string       `json:"title,omitempty"`
	Risk     tool.Risk    `json:"risk,omitempty"`
	Confirm  tool.Confirm `json:"confirm,omitempty"`
	// Raised is true when annotations made risk or confirmation stricter
	// than the configuration alone.
	Raised bool `json:"raised,omitempty"`
	// Hidden says why the tool is not offered; empty when it is.
	Hidden string `json:"hidden,omitempty"`
}

// target is one visible tool with everything a call needs. Immutable.
type target struct {
	info     ToolInfo
	spec     tool.Spec // Name is info.Exposed
	input    *tool.Schema
	output   *jsonschema.Schema // nil without an outputSchema
	roles    []string
	rate     Rate
	argsHint string
}

// catalog is one listing of a server's tools under the policy. Immutable;
// a refresh replaces it whole.
type catalog struct {
	targets  []*target          // visible, by server tool name
	byName   map[string]*target // by the server's name
	byMapped map[string]*target // by the mapped name
	all      []ToolInfo         // every listed tool, by name
	hidden   []ToolInfo
}

func (c *catalog) lookup(name string) (*target, bool) {
	if c == nil {
		return nil, false
	}
	if t, ok := c.byName[name]; ok {
		return t, true
	}
	t, ok := c.byMapped[name]
	return t, ok
}

// Catalog describes every tool the server listed, visible or hidden, by
// name. It is a snapshot of the last listing.
func (s *Server) Catalog() []ToolInfo {
	c := s.cat.Load()
	if c == nil {
		return nil
	}
	return append([]ToolInfo(nil), c.all...)
}

func buildCatalog(cfg ServerConfig, tools []*mcp.Tool) *catalog {
	c := &catalog{byName: map[string]*target{}, byMapped: map[string]*target{}}
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	seen := map[string]bool{}
	mappedTaken := map[string]bool{}
	exposedTaken := map[string]bool{}
	for i, t := range tools {
		info := ToolInfo{Server: cfg.Name, Name: t.Name}
		if i >= maxTools {
			info.Hidden = fmt.Sprintf("the server lists more than %d tools", maxTools)
			c.add(info, nil)
			continue
		}
		if seen[t.Name] {
			info.Hidden = "listed twice"
			c.add(info, nil)
			continue
		}
		seen[t.Name] = true
		tg, reason := buildTarget(cfg, t)
		if reason != "" {
			info.Hidden = reason
			c.add(info, nil)
			continue
		}
		mapped := mapName(t.Name)
		if mappedTaken[mapped] {
			mapped = mapped + "-" + shortHash(t.Name)
		}
		mappedTaken[mapped] = true
		exposed := cfg.Name + "." + mapped
		if len(exposed) > maxNameLen || exposedTaken[exposed] {
			exposed = exposed[:min(len(exposed), maxNameLen-9)] + "-" + shortHash(t.Name)
		}
		exposedTaken[exposed] = true
		tg.info.Exposed = exposed
		tg.info.Resolved = "mcp:" + cfg.Name + "/" + mapped
		tg.spec.Name = exposed
		c.add(tg.info, tg)
		c.byMapped[mapped] = tg
	}
	return c
}

func (c *catalog) add(info ToolInfo, tg *target) {
	c.all = append(c.all, info)
	if tg == nil {
		c.hidden = append(c.hidden, info)
		return
	}
	c.targets = append(c.targets, tg)
	c.byName[info.Name] = tg
}

// buildTarget applies the policy to one listed tool and compiles its
// schemas. A non-empty reason means the tool is hidden.
func buildTarget(cfg ServerConfig, t *mcp.Tool) (*target, string) {
	if t.Name == "" || !utf8.ValidString(t.Name) || len(t.Name) > 256 {
		return nil, "the tool name is empty, not UTF-8 or too long"
	}
	d := cfg.Policy.decide(t.Name, hintsOf(t.Annotations))
	if d.hidden != "" {
		return nil, d.hidden
	}
	inputRaw, err := schemaBytes(t.InputSchema)
	if err != nil {
		return nil, "input schema: " + err.Error()
	}
	input, err := tool.CompileSchema("mcp-"+cfg.Name+"-input", inputRaw)
	if err != nil {
		return nil, "unsupported input schema: " + err.Error()
	}
	var output *jsonschema.Schema
	if t.OutputSchema != nil {
		outputRaw, err := schemaBytes(t.OutputSchema)
		if err == nil {
			output, err = compileOutput(outputRaw)
		}
		if err != nil {
			return nil, "unsupported output schema: " + err.Error()
		}
	}

	title := d.entry.Title
	if title == "" {
		title = t.Title
	}
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title == "" {
		title = t.Name
	}
	desc := d.entry.Description
	if desc == "" {
		desc = t.Description
	}
	timeout := d.entry.Timeout
	if timeout == 0 {
		timeout = cfg.Timeout
	}
	rate := cfg.RateLimits.PerTool
	if d.entry.Rate != nil {
		rate = *d.entry.Rate
	}
	title = cleanText(title, maxTitle)
	tg := &target{
		info: ToolInfo{Server: cfg.Name, Name: t.Name, Title: title, Risk: d.risk, Confirm: d.confirm, Raised: d.hinted},
		spec: tool.Spec{
			Title:       title,
			Description: cleanText(desc, maxDescription),
			InputSchema: inputRaw,
			Server:      cfg.Name,
			RemoteName:  t.Name,
			Policy:      tool.Policy{Risk: d.risk, Confirm: d.confirm, Timeout: timeout, MaxResultBytes: cfg.MaxResultBytes},
		},
		input:    input,
		output:   output,
		roles:    d.entry.Roles,
		rate:     rate,
		argsHint: argsHint(inputRaw),
	}
	if tg.spec.Description == "" {
		tg.spec.Description = title
	}
	return tg, ""
}

func hintsOf(a *mcp.ToolAnnotations) hints {
	if a == nil {
		return hints{}
	}
	return hints{present: true, readOnly: a.ReadOnlyHint, destructive: a.DestructiveHint, openWorld: a.OpenWorldHint}
}

// schemaBytes re-encodes a schema as the SDK decoded it. A missing schema
// is an error: the protocol requires one.
func schemaBytes(v any) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("missing")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(b, []byte("null")) {
		return nil, fmt.Errorf("missing")
	}
	return b, nil
}

func compileOutput(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("must be a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "mem:///output.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// mapName maps a server's tool name onto the registry's alphabet.
func mapName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < utf8.RuneSelf && (r == '_' || r == '.' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// cleanText makes server-provided text safe to show: control characters
// become spaces, whitespace runs collapse, and the text is cut to max
// runes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "")
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		if n >= max {
			return strings.TrimSpace(b.String()) + "…"
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// argsHint summarizes an input schema in one line for the model:
// "message: string (required); count: number".
func argsHint(raw []byte) string {
	var s struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return "no arguments"
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		p := s.Properties[k]
		typ := "any"
		switch t := p.Type.(type) {
		case string:
			typ = t
		case []any:
			var ts []string
			for _, x := range t {
				ts = append(ts, fmt.Sprint(x))
			}
			typ = strings.Join(ts, "|")
		}
		part := cleanText(k, 40) + ": " + typ
		if len(p.Enum) > 0 && len(p.Enum) <= 8 {
			vals := make([]string, len(p.Enum))
			for i, v := range p.Enum {
				b, _ := json.Marshal(v)
				vals[i] = string(b)
			}
			part += " one of " + strings.Join(vals, ", ")
		}
		if req[k] {
			part += " (required)"
		}
		parts = append(parts, part)
		if len(parts) == 20 {
			parts = append(parts, "…")
			break
		}
	}
	return cleanText(strings.Join(parts, "; "), 600)
}
