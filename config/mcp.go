package config

import (
	"fmt"
	"time"
)

// MCP lists the MCP servers whose tools are offered (each as
// "<server>.<tool>", and all through the universal "mcp" action).
type MCP struct {
	Servers []MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server and our risk policy for its tools.
type MCPServer struct {
	Name string `yaml:"name"`
	// Command starts a stdio server (the first element is the program);
	// URL reaches a streamable HTTP server instead.
	Command    []string          `yaml:"command"`
	Dir        string            `yaml:"dir"`
	Env        map[string]string `yaml:"env"`
	InheritEnv []string          `yaml:"inherit_env"`
	URL        string            `yaml:"url"`
	Headers    map[string]string `yaml:"headers"`
	BearerEnv  string            `yaml:"bearer_env"`
	// Trusted servers show tools the config does not mention (with risk
	// from DefaultRisk and the tools' annotations, only toward caution).
	Trusted        bool                     `yaml:"trusted"`
	DefaultRisk    string                   `yaml:"default_risk"`
	DefaultConfirm string                   `yaml:"default_confirm"`
	Timeout        Duration                 `yaml:"timeout"`
	Tools          map[string]MCPToolPolicy `yaml:"tools"`
	// Sampling and Elicitation let the server ask, during a call, for a
	// completion of our model or for the user's input; each request is
	// shown to the user for approval. Off by default. AskTimeout bounds
	// the wait for the answer (default 60s).
	Sampling    bool     `yaml:"sampling"`
	Elicitation bool     `yaml:"elicitation"`
	AskTimeout  Duration `yaml:"ask_timeout"`
}

// MCPToolPolicy is the policy of the tools a name or glob matches.
type MCPToolPolicy struct {
	Risk    string   `yaml:"risk"`
	Confirm string   `yaml:"confirm"`
	Hidden  bool     `yaml:"hidden"`
	Roles   []string `yaml:"roles"`
	Title   string   `yaml:"title"`
	Timeout Duration `yaml:"timeout"`
}

// DefaultAskTimeout is the MCP client's wait for the user's answer to a
// server's request when ask_timeout is not set (mcptool.DefaultAskTimeout).
const DefaultAskTimeout = 60 * time.Second

// check checks each MCP server and that each has a name of its own.
func (m *MCP) check(v *validator) {
	names := map[string]bool{}
	for i, srv := range m.Servers {
		p := fmt.Sprintf("tools.mcp.servers[%d]", i)
		if srv.Name == "" || names[srv.Name] {
			v.errorf(p+".name", "a unique name is required")
		}
		names[srv.Name] = true
		srv.check(v, p)
	}
}

// check checks one MCP server at path p (tools.mcp.servers[i]): its
// transport, its tools' policies and its timeouts.
func (srv MCPServer) check(v *validator, p string) {
	if (len(srv.Command) == 0) == (srv.URL == "") {
		v.errorf(p, "set exactly one of command (stdio) or url (streamable HTTP)")
	}
	if srv.DefaultRisk != "" && !knownScopes[srv.DefaultRisk] {
		v.errorf(p+".default_risk", "unknown risk %q", srv.DefaultRisk)
	}
	for pattern, tp := range srv.Tools {
		tp.check(v, p+".tools."+pattern)
	}
	if srv.AskTimeout < 0 {
		v.errorf(p+".ask_timeout", "must not be negative")
	}
	ask := srv.AskTimeout
	if ask == 0 {
		ask = Duration(DefaultAskTimeout)
	}
	if (srv.Sampling || srv.Elicitation) && srv.Timeout != 0 && srv.Timeout <= ask {
		v.errorf(p+".timeout", "with sampling or elicitation on, a call's timeout (%s) must be longer than the wait for the user's answer (ask_timeout %s)",
			time.Duration(srv.Timeout), time.Duration(ask))
	}
	if srv.BearerEnv != "" && v.getenv(srv.BearerEnv) == "" {
		v.errorf(p+".bearer_env", "environment variable %s is empty or unset", srv.BearerEnv)
	}
}

// check checks the policy of the tools a pattern matches, at path p.
func (tp MCPToolPolicy) check(v *validator, p string) {
	for j, role := range tp.Roles {
		v.role(fmt.Sprintf("%s.roles[%d]", p, j), role)
	}
	if tp.Risk != "" && !knownScopes[tp.Risk] {
		v.errorf(p+".risk", "unknown risk %q", tp.Risk)
	}
	if tp.Confirm != "" && tp.Confirm != "always" && tp.Confirm != "never" {
		v.errorf(p+".confirm", "unknown confirm policy %q", tp.Confirm)
	}
}
