package config

import "go.yaml.in/yaml/v3"

// Tools configures the built-in tools.
type Tools struct {
	Taskboard *Taskboard `yaml:"taskboard"`
	// HTTP tools call operators' own endpoints.
	HTTP []HTTPTool `yaml:"http"`
	// Trello replaces the embedded task board with a Trello board (the
	// same actions).
	Trello *Trello `yaml:"trello"`
	// Calendar enables create_event and schedule_team_meeting.
	Calendar *Calendar `yaml:"calendar"`
	// MCP connects Model Context Protocol servers.
	MCP *MCP `yaml:"mcp"`
	// Knowledge enables add_knowledge and search_knowledge.
	Knowledge *ToolSet `yaml:"knowledge"`
	// ContentIdeas enables content_idea and list_content_ideas.
	ContentIdeas *ContentIdeas `yaml:"content_ideas"`
	// Extra holds the sections of tool kinds this package does not
	// describe ("shout: {}"), by kind name, for the program's own kinds
	// (see server.Kinds).
	Extra map[string]yaml.Node `yaml:",inline"`
}

// Taskboard configures the embedded task board.
type Taskboard struct {
	Columns []string `yaml:"columns"`
	// Confirm overrides the confirmation policy per action (always|never).
	Confirm map[string]string `yaml:"confirm"`
	// Members adds board members per tenant beyond the tenant's users.
	Members map[string][]Member `yaml:"members"`
	// Disabled turns the board off.
	Disabled bool `yaml:"disabled"`
}

// Member is an extra board member.
type Member struct {
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
}

// Trello configures the Trello task board.
type Trello struct {
	APIBaseURL string `yaml:"api_base_url"`
	KeyEnv     string `yaml:"key_env"`
	// TokenEnv holds the default connection's token; users may have their
	// own (users[].trello.token_env).
	TokenEnv string            `yaml:"token_env"`
	Board    string            `yaml:"board"`
	DoneList string            `yaml:"done_list"`
	Confirm  map[string]string `yaml:"confirm"`
	// Requires names the integration a user must have connected to be
	// shown the board's tools at all (trello): then every user acts with
	// their own token (users[].trello.token_env), and there is no default
	// connection acting for those who have not connected.
	Requires string `yaml:"requires"`
}

// Calendar configures the calendar tools.
type Calendar struct {
	// Backend is embedded (default) or google.
	Backend string `yaml:"backend"`
	// GoogleBaseURL points the Google backend elsewhere (tests).
	GoogleBaseURL string `yaml:"google_base_url"`
	// Requires names the integration a user must have connected (google,
	// trello) to be shown the calendar tools at all; empty: everyone.
	Requires string `yaml:"requires"`
}

// ToolSet is a built-in set of tools with per-action confirmation
// overrides (always|never).
type ToolSet struct {
	Confirm map[string]string `yaml:"confirm"`
}

// ContentIdeas configures content ideas.
type ContentIdeas struct {
	Platforms []string          `yaml:"platforms"`
	Confirm   map[string]string `yaml:"confirm"`
}

// integrations are what a user can connect (users[].google, users[].trello),
// the values a built-in kind's requires may name.
var integrations = map[string]bool{"google": true, "trello": true}

// check checks the sections of the built-in tool kinds; the sections of
// the program's own kinds (Extra) are their kinds' to decode.
func (t Tools) check(v *validator) {
	if t.Taskboard != nil {
		t.Taskboard.check(v)
	}
	if t.Trello != nil {
		t.Trello.check(v, t.Taskboard)
	}
	if t.Calendar != nil {
		t.Calendar.check(v)
	}
	if t.MCP != nil {
		t.MCP.check(v)
	}
	v.checkHTTPTools(t.HTTP)
	if t.Knowledge != nil {
		v.checkConfirmPolicies("tools.knowledge.confirm", t.Knowledge.Confirm)
	}
	if t.ContentIdeas != nil {
		v.checkConfirmPolicies("tools.content_ideas.confirm", t.ContentIdeas.Confirm)
	}
}

// checkConfirmPolicies checks a section's per-action confirmation
// overrides, at path.
func (v *validator) checkConfirmPolicies(path string, confirm map[string]string) {
	for action, policy := range confirm {
		if policy != "always" && policy != "never" {
			v.errorf(path+"."+action, "unknown confirm policy %q (always or never)", policy)
		}
	}
}

// check checks the embedded board's confirm policies and that its extra
// members belong to defined tenants.
func (tb *Taskboard) check(v *validator) {
	v.checkConfirmPolicies("tools.taskboard.confirm", tb.Confirm)
	tenants := v.cfg.tenantIDs()
	for tenant := range tb.Members {
		if !tenants[tenant] {
			v.errorf("tools.taskboard.members."+tenant, "no tenant %q is defined", tenant)
		}
	}
}

// check checks the Trello board, the one task board unless taskboard is
// disabled.
func (tr *Trello) check(v *validator, taskboard *Taskboard) {
	if taskboard != nil && !taskboard.Disabled {
		v.errorf("tools.trello", "choose one task board: trello or taskboard (set taskboard.disabled: true)")
	}
	if tr.Board == "" || tr.KeyEnv == "" {
		v.errorf("tools.trello", "board and key_env are required")
	} else if v.getenv(tr.KeyEnv) == "" {
		v.errorf("tools.trello.key_env", "environment variable %s is empty or unset", tr.KeyEnv)
	}
	v.checkConfirmPolicies("tools.trello.confirm", tr.Confirm)
	tr.checkRequires(v)
}

// checkRequires: a board shown only to users who connected Trello acts
// with each one's own token, so no default token may stand in for theirs,
// and every connected user needs one.
func (tr *Trello) checkRequires(v *validator) {
	switch {
	case tr.Requires == "":
		return
	case !integrations[tr.Requires]:
		v.errorf("tools.trello.requires", "unknown integration %q (google or trello)", tr.Requires)
		return
	case tr.TokenEnv != "":
		v.errorf("tools.trello.token_env", "a board that requires %s acts with each user's own token: remove the default token", tr.Requires)
	}
	if tr.Requires != "trello" {
		return
	}
	for _, t := range v.cfg.Tenants {
		for _, u := range t.Users {
			if u.Trello != nil && u.Trello.TokenEnv == "" {
				v.errorf("tenants."+t.ID+".users."+u.ID+".trello.token_env", "the board requires trello: a connected user needs their own token")
			}
		}
	}
}

// check checks the calendar's backend and the integration it requires.
func (cal *Calendar) check(v *validator) {
	if cal.Backend != "" && cal.Backend != "embedded" && cal.Backend != "google" {
		v.errorf("tools.calendar.backend", "unknown calendar backend %q (embedded or google)", cal.Backend)
	}
	if cal.Requires != "" && !integrations[cal.Requires] {
		v.errorf("tools.calendar.requires", "unknown integration %q (google or trello)", cal.Requires)
	}
}
