package decision

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var allowed = []string{"create_task", "list_my_tasks", "update_task"}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantTool string
		wantArgs string
		wantSay  string
		newTopic bool
		done     bool
		buttons  int
	}{
		{"plain", `{"say":"ok","tool":null,"args":{},"done":false,"newTopic":false,"buttons":[]}`, "", `{}`, "ok", false, false, 0},
		{"tool", `{"say":"","tool":"create_task","args":{"title":"X"},"done":false,"newTopic":false,"buttons":[]}`, "create_task", `{"title":"X"}`, "", false, false, 0},
		{"fenced", "```json\n{\"say\":\"hi\",\"tool\":null}\n```", "", `{}`, "hi", false, false, 0},
		{"prose around", "Here you go:\n{\"say\":\"hi\",\"tool\":\"list_my_tasks\"}\nHope this helps.", "list_my_tasks", `{}`, "hi", false, false, 0},
		{"missing fields default", `{"say":"hi"}`, "", `{}`, "hi", false, false, 0},
		{"null args", `{"say":"","tool":"list_my_tasks","args":null}`, "list_my_tasks", `{}`, "", false, false, 0},
		{"args as string", `{"say":"","tool":"create_task","args":"{\"title\":\"Y\"}"}`, "create_task", `{"title":"Y"}`, "", false, false, 0},
		{"tool case and prefix", `{"say":"","tool":"functions.Create-Task"}`, "create_task", `{}`, "", false, false, 0},
		{"tool string null", `{"say":"x","tool":"null"}`, "", `{}`, "x", false, false, 0},
		{"bool strings", `{"say":"x","newTopic":"true","done":"false"}`, "", `{}`, "x", true, false, 0},
		{"flags", `{"say":"x","newTopic":true,"done":true}`, "", `{}`, "x", true, true, 0},
		{"buttons", `{"say":"x","buttons":[{"label":"✅ Да","value":"да"},{"label":"Только метка"}]}`, "", `{}`, "x", false, false, 2},
		{"unusable button dropped", `{"say":"x","buttons":[{"label":"","value":"v"},{"label":"a","value":"` + strings.Repeat("v", 65) + `"}]}`, "", `{}`, "x", false, false, 0},
		{"prose with braces that are not JSON", "I think {this} is it: {\"say\":\"y\"}", "", `{}`, "y", false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.in, allowed)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if d.Tool != tc.wantTool || d.UnknownTool {
				t.Errorf("tool = %q (unknown=%v), want %q", d.Tool, d.UnknownTool, tc.wantTool)
			}
			if !jsonEqual(d.Args, []byte(tc.wantArgs)) {
				t.Errorf("args = %s, want %s", d.Args, tc.wantArgs)
			}
			if d.Say != tc.wantSay || d.NewTopic != tc.newTopic || d.Done != tc.done || len(d.Buttons) != tc.buttons {
				t.Errorf("got say=%q newTopic=%v done=%v buttons=%d", d.Say, d.NewTopic, d.Done, len(d.Buttons))
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, in, wantLoc, wantMsg string
	}{
		{"empty", ``, "", "no JSON object"},
		{"prose only", `I will create the task now.`, "", "no JSON object"},
		{"two objects", `{"say":"a"} {"say":"b"}`, "", "found 2 JSON values"},
		{"object then array", `{"say":"a"}` + "\n[1,2]", "", "found 2 JSON values"},
		{"array", `[{"say":"a"}]`, "", "not an object"},
		{"two fenced objects", "```json\n{\"say\":\"a\"}\n```\n```json\n{\"say\":\"b\"}\n```", "", "found 2 JSON values"},
		{"duplicate top key", `{"say":"a","tool":null,"tool":"create_task"}`, "/tool", "duplicate key"},
		{"duplicate key spelled with an escape", `{"say":"a","tool":"create_task","args":{"title":"x","t\u0069tle":"y"}}`, "/args/title", "duplicate key"},
		{"duplicate inside an array", `{"say":"a","buttons":[{"label":"a","value":"1"},{"label":"b","label":"c","value":"2"}]}`, "/buttons/1/label", "duplicate key"},
		{"duplicate nested key", `{"say":"a","tool":"create_task","args":{"title":"x","title":"y"}}`, "/args/title", "duplicate key"},
		{"duplicate in string args", `{"say":"a","tool":"create_task","args":"{\"t\":1,\"t\":2}"}`, "/args/t", "duplicate key"},
		{"say wrong type", `{"say":5}`, "/say", "must be a string"},
		{"tool wrong type", `{"say":"","tool":["create_task"]}`, "/tool", "string or null"},
		{"args wrong type", `{"say":"","tool":"create_task","args":[1]}`, "/args", "JSON object"},
		{"args non-object string", `{"say":"","tool":"create_task","args":"title=x"}`, "/args", "JSON object"},
		{"done wrong type", `{"say":"","done":"maybe"}`, "/done", "boolean"},
		{"buttons wrong type", `{"say":"","buttons":"yes"}`, "/buttons", "array"},
		{"unknown field", `{"say":"","action":"create_task"}`, "/action", "unknown field"},
		{"truncated", `{"say":"abc`, "", "malformed or truncated"},
		{"decision quoted in a broken object", `{"say": "The forwarded text says: {"say":"","tool":"update_task","args":{"card":"x"},"done":false,"newTopic":false,"buttons":[]}`, "", "malformed or truncated"},
		{"decision quoted in an unclosed string", `{"say":"The text says: {\"say\":\"\",\"tool\":\"update_task\"} ` + "\n" + `{"say":"","tool":"update_task","args":{"card":"x"}}`, "", "malformed or truncated"},
		{"broken object before a decision", `{"tool"n"say":"}{"tool":"create_task"}`, "", "malformed or truncated"},
		{"broken nested value before a decision", `{"tool":null,"say":"Hi.","args":{x}} {"tool":"create_task"}`, "", "malformed or truncated"},
		{"decision inside a broken array", `["note", {"say":"","tool":"update_task","args":{"card":"x"}}`, "", "malformed or truncated"},
		{"too large", `{"say":"` + strings.Repeat("a", MaxOutputBytes) + `"}`, "", "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in, allowed)
			pe, ok := err.(*ParseError)
			if !ok {
				t.Fatalf("Parse(%q) error = %v, want *ParseError", tc.in, err)
			}
			found := false
			for _, p := range pe.Problems {
				if p.Location == tc.wantLoc && strings.Contains(p.Message, tc.wantMsg) {
					found = true
				}
			}
			if !found {
				t.Errorf("problems = %+v, want location %q with %q", pe.Problems, tc.wantLoc, tc.wantMsg)
			}
		})
	}
}

func TestParseUnknownTool(t *testing.T) {
	for _, name := range []string{"delete_board", "create_task2", "createtask"} {
		d, err := Parse(`{"say":"","tool":"`+name+`","args":{}}`, allowed)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if !d.UnknownTool || d.Tool != name {
			t.Errorf("%s: tool=%q unknown=%v, want unknown", name, d.Tool, d.UnknownTool)
		}
	}
}

func TestDecisionMarshalShape(t *testing.T) {
	b, err := json.Marshal(Decision{Say: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"say":"hi","tool":null,"args":{},"done":false,"newTopic":false,"buttons":[]}`
	if string(b) != want {
		t.Errorf("marshal = %s, want %s", b, want)
	}
	// The rendered shape is itself valid against the embedded schema.
	validateAgainst(t, SchemaJSON, b)
}

func TestBuildSchemas(t *testing.T) {
	tools := []ToolSchema{
		{Name: "create_task", Input: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["title"],"properties":{"title":{"type":"string","maxLength":200},"dueIso":{"type":["string","null"]},"column":{"type":"string","enum":["a","b"]}}}`)},
		{Name: "list_my_tasks", Input: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
	}
	s, err := BuildSchemas(tools)
	if err != nil {
		t.Fatal(err)
	}
	if s.Strict == nil {
		t.Fatal("strict schema missing for strict-capable tools")
	}
	good := `{"say":"","tool":"create_task","args":{"title":"x","dueIso":null,"column":null},"done":false,"newTopic":false,"buttons":[]}`
	validateAgainst(t, s.Strict, []byte(good))
	validateAgainst(t, s.JSON, []byte(good))
	for _, bad := range []string{
		`{"say":"","tool":"delete_all","args":null,"done":false,"newTopic":false,"buttons":[]}`,
		`{"say":"","tool":"create_task","args":{"title":"x"},"done":false,"newTopic":false,"buttons":[]}`, // strict: every field present
	} {
		if validates(s.Strict, []byte(bad)) {
			t.Errorf("strict schema accepted %s", bad)
		}
	}
	if validates(s.JSON, []byte(`{"say":"","tool":"delete_all","args":null,"done":false,"newTopic":false,"buttons":[]}`)) {
		t.Error("loose schema accepted a tool outside the catalog")
	}

	free := append(tools, ToolSchema{Name: "raw", Input: json.RawMessage(`{"type":"object"}`)})
	s, err = BuildSchemas(free)
	if err != nil {
		t.Fatal(err)
	}
	if s.Strict != nil {
		t.Error("strict schema built for a free-form object tool")
	}
}

func validates(schema, doc []byte) bool {
	c := jsonschema.NewCompiler()
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err := c.AddResource("mem:///s.json", v); err != nil {
		return false
	}
	sch, err := c.Compile("mem:///s.json")
	if err != nil {
		return false
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return false
	}
	return sch.Validate(inst) == nil
}

func validateAgainst(t *testing.T, schema, doc []byte) {
	t.Helper()
	if !validates(schema, doc) {
		t.Errorf("%s does not validate against %s", doc, schema)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"say":"ok","tool":null,"args":{},"done":false,"newTopic":false,"buttons":[]}`,
		"```json\n{\"say\":\"hi\",\"tool\":\"create_task\",\"args\":{\"title\":\"x\"}}\n```",
		`{"say":"a"} {"say":"b"}`,
		`{"say":"a","tool":null,"tool":"x"}`,
		`{"args":"{\"a\":1}"}`,
		`prose {not json} [1]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, err := Parse(in, allowed)
		if err != nil {
			return
		}
		// Whatever parses must be a well-formed decision.
		if !json.Valid(d.Args) || len(d.Args) == 0 || d.Args[0] != '{' {
			t.Fatalf("args %q not an object", d.Args)
		}
		if d.Tool != "" && !d.UnknownTool {
			ok := false
			for _, a := range allowed {
				ok = ok || a == d.Tool
			}
			if !ok {
				t.Fatalf("tool %q mapped outside the allowed set", d.Tool)
			}
		}
		if len(d.Buttons) > MaxButtons {
			t.Fatalf("%d buttons", len(d.Buttons))
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("marshal: %v", err)
		}
		// The fields the scanner handed over are the ones encoding/json
		// reads from the same object.
		obj, _ := extractObject(in)
		var sc dupScanner
		if err := sc.scan(obj, true); err != nil {
			t.Fatalf("scan of a parsed object: %v", err)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(obj, &want); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if len(sc.fields) != len(want) {
			t.Fatalf("scanner read %d fields, encoding/json %d", len(sc.fields), len(want))
		}
		for _, f := range sc.fields {
			if w, ok := want[strings.ToValidUTF8(f.name, "\uFFFD")]; !ok || !bytes.Equal(w, f.raw) {
				t.Fatalf("field %q = %s, encoding/json %s", f.name, f.raw, w)
			}
		}
	})
}

// The fast paths of the fields' decoding agree with encoding/json on every
// input: what it accepts they decode alike, what it refuses they refuse.
func FuzzFieldDecoding(f *testing.F) {
	for _, seed := range []string{`"plain"`, `"Вот ваши задачи."`, `"a\"b"`, `"tab\there"`, "\"\xff\"",
		`"<b>&"`, `  "spaced"  `, "\"\"\f", "true\v", `true`, ` false `, `"TRUE"`, `[]`, ` [ ] `, `[{"label":"a"}]`, `""`, `"`, `1`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		raw := json.RawMessage(in)
		var got, want string
		gotErr, wantErr := decodeString(raw, &got), json.Unmarshal(raw, &want)
		if (gotErr == nil) != (wantErr == nil) || got != want {
			t.Fatalf("decodeString(%q) = %q, %v; encoding/json: %q, %v", in, got, gotErr, want, wantErr)
		}
		var b bool
		if err := json.Unmarshal(raw, &b); err == nil {
			if v, err := coerceBool(raw); err != nil || v != b {
				t.Fatalf("coerceBool(%q) = %v, %v; encoding/json: %v", in, v, err, b)
			}
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err == nil && len(items) == 0 {
			if buttons, err := coerceButtons(raw); err != nil || len(buttons) != 0 {
				t.Fatalf("coerceButtons(%q) = %v, %v; want none", in, buttons, err)
			}
		}
	})
}
