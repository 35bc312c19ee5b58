package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Channels configures the channels besides the HTTP API.
type Channels struct {
	Telegram *Telegram `yaml:"telegram"`
	// MCP serves the configured tools to MCP clients on the HTTP listener
	// (streamable HTTP, each request with an API key), as `arbiter mcp
	// -listen` does on its own.
	MCP *MCPChannel `yaml:"mcp"`
	// Extra holds the sections of channel kinds this package does not
	// describe, by kind name, for the program's own kinds (see
	// server.Kinds).
	Extra map[string]yaml.Node `yaml:",inline"`
}

// MCPChannel configures arbiter as an MCP server inside `arbiter serve`.
type MCPChannel struct {
	// Path is where it is served; default /mcp.
	Path string `yaml:"path"`
	// ConfirmTimeout bounds the wait for the human's answer to a
	// confirmation; default 5m.
	ConfirmTimeout Duration `yaml:"confirm_timeout"`
}

// Telegram configures the Telegram bot.
type Telegram struct {
	TokenEnv string `yaml:"token_env"`
	// Mode is webhook or polling; default webhook when public_url is set.
	Mode           string `yaml:"mode"`
	SecretTokenEnv string `yaml:"secret_token_env"`
	// APIBaseURL defaults to the public Bot API; tests use a local fake.
	APIBaseURL  string `yaml:"api_base_url"`
	WebhookPath string `yaml:"webhook_path"`
	// PublicURL is where Telegram reaches this server (webhook mode).
	PublicURL string `yaml:"public_url"`
	// Tenant whose users the bot serves (matched by telegram_ids).
	Tenant string `yaml:"tenant"`
	// Transcription sends voice messages to an OpenAI-compatible
	// /audio/transcriptions endpoint; without it voice gets a clear reply.
	Transcription *Transcription `yaml:"transcription"`
}

// Transcription is an OpenAI-compatible speech-to-text endpoint.
type Transcription struct {
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKeyEnv string `yaml:"api_key_env"`
}

// check checks the sections of the built-in channel kinds; the sections
// of the program's own kinds (Extra) are their kinds' to decode.
func (ch Channels) check(v *validator) {
	if ch.MCP != nil {
		ch.MCP.check(v)
	}
	if ch.Telegram != nil {
		ch.Telegram.check(v)
	}
}

// check checks that the MCP channel's path is one no other route of the
// listener takes.
func (m *MCPChannel) check(v *validator) {
	switch p := m.Path; {
	case p == "":
	case !strings.HasPrefix(p, "/") || p == "/" || strings.HasPrefix(p, "/v1/") || p == "/healthz" || p == "/metrics" ||
		strings.ContainsAny(p, " {}"):
		v.errorf("channels.mcp.path", "must be a path of its own such as /mcp, not %q", p)
	}
	if m.ConfirmTimeout < 0 {
		v.errorf("channels.mcp.confirm_timeout", "must not be negative")
	}
}

// check checks the bot's token, its tenant and what its mode needs.
func (tg *Telegram) check(v *validator) {
	if tg.TokenEnv == "" || v.getenv(tg.TokenEnv) == "" {
		v.errorf("channels.telegram.token_env", "the bot token must come from a set environment variable")
	}
	if !v.cfg.tenantIDs()[tg.Tenant] {
		v.errorf("channels.telegram.tenant", "no tenant %q is defined", tg.Tenant)
	}
	switch tg.Mode {
	case "", "polling":
	case "webhook":
		if tg.PublicURL == "" {
			v.errorf("channels.telegram", "webhook mode needs public_url")
		}
		if tg.SecretTokenEnv == "" || v.getenv(tg.SecretTokenEnv) == "" {
			v.errorf("channels.telegram.secret_token_env", "webhook mode needs a secret token from a set environment variable")
		}
	default:
		v.errorf("channels.telegram.mode", "unknown mode %q (webhook or polling)", tg.Mode)
	}
}
