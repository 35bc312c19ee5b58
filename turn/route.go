package turn

import (
	"strings"

	"github.com/arbiterhq/arbiter/chat"
)

// routeKind is what the deterministic routes make of a message before any
// state is loaded.
type routeKind int

const (
	routeText    routeKind = iota // free text: the model decides
	routeAffirm                   // "да", "ok", "+", or a confirm button
	routeDeny                     // "нет", "no", or a cancel button
	routeCommand                  // a slash command
	routeEmpty                    // no words, no button, no evidence
	routeCall                     // a tool call made by the caller's program (chat.Inbound.Call)
	routeResume                   // the engine's own turn for a decided action (Engine.resume)
)

// Button values the server puts on its own confirmation keyboards; the id
// ties a button to one pending action, so a stale keyboard cannot confirm a
// newer action.
const (
	confirmPrefix = "confirm:"
	cancelPrefix  = "cancel:"
)

type route struct {
	kind routeKind
	// pendingID is set when the user pressed a confirmation button.
	pendingID string
	command   string
	// input is the user's own words: the pressed button's value, or text.
	input string
	// thanks is set when a typed yes or no also thanks ("ок, спасибо").
	thanks bool
}

func (r route) name() Route {
	switch r.kind {
	case routeAffirm:
		return RouteAffirm
	case routeDeny:
		return RouteDeny
	case routeCommand:
		return RouteCommand(r.command)
	case routeEmpty:
		return RouteEmpty
	case routeCall:
		return RouteCall
	case routeResume:
		return RouteResume
	}
	return RouteText
}

// classify is the pure first step: it looks only at the message. Evidence
// never counts as the user's words, so a forwarded "да" is not an
// affirmative.
func classify(in chat.Inbound, commands map[string]Command) route {
	if in.Call != nil {
		return route{kind: routeCall, input: "/call " + in.Call.Tool + " " + string(in.Call.Args)}
	}
	if in.Button != "" {
		switch {
		case strings.HasPrefix(in.Button, confirmPrefix):
			return route{kind: routeAffirm, pendingID: strings.TrimPrefix(in.Button, confirmPrefix), input: in.Button}
		case strings.HasPrefix(in.Button, cancelPrefix):
			return route{kind: routeDeny, pendingID: strings.TrimPrefix(in.Button, cancelPrefix), input: in.Button}
		}
		return classifyText(in.Button, commands)
	}
	if strings.TrimSpace(in.Text) == "" {
		if len(in.Evidence) > 0 {
			return route{kind: routeText}
		}
		return route{kind: routeEmpty}
	}
	return classifyText(in.Text, commands)
}

func classifyText(text string, commands map[string]Command) route {
	r := route{kind: routeText, input: text}
	norm := strings.ToLower(strings.TrimSpace(text))
	if !strings.HasPrefix(norm, "/") {
		r.kind, r.thanks = answer(text)
		return r
	}
	cmd := strings.Fields(norm)[0]
	if at := strings.IndexByte(cmd, '@'); at > 0 { // "/tasks@my_bot"
		cmd = cmd[:at]
	}
	if _, ok := commands[cmd]; ok || builtinCommands[cmd] {
		r.kind, r.command = routeCommand, cmd
	}
	return r
}

// builtinCommands need no tool.
var builtinCommands = map[string]bool{"/start": true, "/help": true, "/reset": true, "/cancel": true}
