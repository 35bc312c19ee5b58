package gate

import (
	"path"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/tool"
)

// Permitted reports whether a caller may run the tool of spec: its role
// shows the tool (grants are the role's tool patterns; an unknown role
// has none), the integration the tool requires is connected for it, and
// its scopes allow the tool's risk. It is the single rule for what may
// run; an assistant's catalog is this rule applied in advance.
func Permitted(id chat.Identity, grants []string, spec tool.Spec) bool {
	if !Matches(grants, spec.Name) {
		return false
	}
	if spec.Requires != "" && !id.Connects(spec.Requires) {
		return false // the integration is not connected for this user
	}
	return id.HasScope(chat.Scope(spec.Risk))
}

// Matches reports whether a tool name matches one of patterns: the name
// itself, "*", or a path.Match pattern ("list_*"). A malformed pattern
// matches nothing.
func Matches(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name || p == "*" {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}
