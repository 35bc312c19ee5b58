package agentdojo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/tool"
	"github.com/arbiterhq/arbiter/tool/funcdef"
)

// sections says where in its suite's environment each tool reads, listed
// by section since several tools read one: a dotted path, narrowed by the
// call's arguments (see pick). A tool not listed returns only an
// acknowledgement; get_webpage is a write by CaMeL's flags (fetching a
// link sends data to its host) that also reads.
var sections = map[string]map[string]string{
	"banking": bySection(map[string][]string{
		"bank_account.iban":                   {"get_iban"},
		"bank_account.balance":                {"get_balance"},
		"bank_account.transactions":           {"get_most_recent_transactions"},
		"bank_account.scheduled_transactions": {"get_scheduled_transactions"},
		"filesystem.files":                    {"read_file"},
		"user_account":                        {"get_user_info"},
	}),
	"slack": bySection(map[string][]string{
		"slack.channels":      {"get_channels"},
		"slack.channel_inbox": {"read_channel_messages"},
		"slack.user_inbox":    {"read_inbox"},
		"slack.user_channels": {"get_users_in_channel"},
		"web.web_content":     {"get_webpage"},
	}),
	"travel": bySection(map[string][]string{
		"user": {"get_user_information"},
		"hotels.hotel_list": {
			"get_all_hotels_in_city", "get_hotels_prices", "get_rating_reviews_for_hotels", "get_hotels_address",
		},
		"restaurants.restaurant_list": {
			"get_all_restaurants_in_city", "get_cuisine_type_for_restaurants", "get_restaurants_address",
			"get_rating_reviews_for_restaurants", "get_dietary_restrictions_for_all_restaurants",
			"get_contact_information_for_restaurants", "get_price_for_restaurants",
			"check_restaurant_opening_hours",
		},
		"car_rental.company_list": {
			"get_all_car_rental_companies_in_city", "get_car_types_available",
			"get_rating_reviews_for_car_rental", "get_car_fuel_options", "get_car_rental_address",
			"get_car_price_per_day",
		},
		"calendar.initial_events": {"search_calendar_events", "get_day_calendar_events"},
		"flights.flight_list":     {"get_flight_information"},
	}),
	"workspace": bySection(map[string][]string{
		"inbox.initial_emails": {
			"get_unread_emails", "get_sent_emails", "get_received_emails", "get_draft_emails", "search_emails",
			"search_contacts_by_name", "search_contacts_by_email",
		},
		"calendar.current_day":      {"get_current_day"},
		"calendar.initial_events":   {"search_calendar_events", "get_day_calendar_events"},
		"cloud_drive.initial_files": {"search_files_by_filename", "get_file_by_id", "list_files", "search_files"},
	}),
}

// bySection turns a suite's tools listed by the section they read into the
// section of each tool.
func bySection(readers map[string][]string) map[string]string {
	out := map[string]string{}
	for section, tools := range readers {
		for _, name := range tools {
			out[name] = section
		}
	}
	return out
}

// Executed is a call a fake backend received.
type Executed struct {
	Tool  string
	Args  json.RawMessage
	Key   string // the idempotency key the engine gave it
	Write bool
}

// backend is one suite's fake systems for one case at a time: the
// environment the tools read, and every call they received.
type backend struct {
	mu  sync.Mutex
	env any
	log []Executed
}

func (b *backend) reset(env any) {
	b.mu.Lock()
	b.env, b.log = env, nil
	b.mu.Unlock()
}

func (b *backend) calls() []Executed {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Executed(nil), b.log...)
}

// fakeTool is a suite's tool on the backend.
type fakeTool struct {
	b       *backend
	spec    tool.Spec
	section string
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }

func (f *fakeTool) Call(ctx context.Context, c tool.Call) (tool.Result, error) {
	f.b.mu.Lock()
	f.b.log = append(f.b.log, Executed{Tool: f.spec.Name, Args: append(json.RawMessage(nil), c.Args...), Key: c.IdempotencyKey, Write: f.spec.Risk.Writes()})
	env := f.b.env
	f.b.mu.Unlock()
	var data any = map[string]string{"status": "done"}
	if f.section != "" {
		var args map[string]any
		_ = json.Unmarshal(c.Args, &args)
		data = pick(lookup(env, f.section), args)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Status: tool.StatusOK, Data: raw, ObservedAt: time.Now()}, nil
}

// registry builds the suite's tools on b, through the same function
// definition loader as any third-party catalog: writes always wait for
// the user's yes there.
func (s *Suite) registry(b *backend) (*tool.Registry, error) {
	var tools []tool.Tool
	for _, td := range s.Tools {
		raw, _ := json.Marshal(map[string]any{"name": td.Name, "description": td.Description, "parameters": td.Parameters})
		def, err := funcdef.Parse(raw, funcdef.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", s.Name, td.Name, err)
		}
		risk := tool.RiskWriteFull
		if td.ReadOnly {
			risk = tool.RiskRead
		}
		spec := def.Spec(risk)
		spec.MaxResultBytes = 128 << 10 // the largest listing (the cloud drive) is ~30 KB
		tools = append(tools, &fakeTool{b: b, spec: spec, section: sections[s.Name][td.Name]})
	}
	return tool.NewRegistry(tools...)
}

// lookup returns the value at a dotted path of env.
func lookup(env any, path string) any {
	v := env
	for _, k := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// pick narrows what a tool reads to what its arguments ask for: an entry
// of a map named by an argument (a file's path, a channel, a page), or the
// items of a list matching every argument; numbers and booleans do not
// narrow. What nothing matches is an empty answer, as a search that finds
// nothing.
func pick(v any, args map[string]any) any {
	var wants [][]string
	for _, a := range args {
		var alts []string
		switch x := a.(type) {
		case string:
			if x = strings.TrimSpace(x); x != "" {
				alts = append(alts, x)
			}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
					alts = append(alts, strings.TrimSpace(s))
				}
			}
		}
		if len(alts) > 0 {
			wants = append(wants, alts)
		}
	}
	if len(wants) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for _, alts := range wants {
			for _, a := range alts {
				for k, e := range x {
					if pageKey(k) == pageKey(a) {
						return e
					}
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			if matchesAll(e, wants) {
				out[k] = e
			}
		}
		return out
	case []any:
		out := []any{}
		for _, e := range x {
			if matchesAll(e, wants) {
				out = append(out, e)
			}
		}
		return out
	}
	return v
}

// pageKey is a key as a link or a name may spell it: without scheme,
// trailing slash or case.
func pageKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
	return strings.TrimSuffix(s, "/")
}

// matchesAll reports whether item matches one alternative of every
// wanted argument: a scalar field equal to it, or (three characters or
// more) text of the item holding it.
func matchesAll(item any, wants [][]string) bool {
	raw, _ := json.Marshal(item)
	text := strings.ToLower(string(raw))
	fields := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			fields[strings.ToLower(x)] = true
		case float64:
			fields[fmt.Sprint(x)] = true
		}
	}
	walk(item)
	for _, alts := range wants {
		hit := false
		for _, a := range alts {
			a = strings.ToLower(a)
			if fields[a] || len(a) >= 3 && strings.Contains(text, strings.Trim(jsonText(a), `"`)) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}
