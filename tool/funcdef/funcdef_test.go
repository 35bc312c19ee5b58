package funcdef

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/tool"
)

// funcDefTool registers a spec built from a definition.
type funcDefTool struct{ spec tool.Spec }

func (f funcDefTool) Spec() tool.Spec { return f.spec }

func (f funcDefTool) Call(context.Context, tool.Call) (tool.Result, error) {
	return tool.Result{Status: tool.StatusOK}, nil
}

// defWithParam is a definition whose only parameter "p" has the schema s.
func defWithParam(s string) string {
	return `{"name":"f","description":"d","parameters":{"type":"dict","properties":{"p":` + s + `}}}`
}

// mappedParam parses a definition and returns the mapped schema of "p",
// after checking that the whole schema compiles.
func mappedParam(t *testing.T, raw, lang string) string {
	t.Helper()
	def, err := Parse([]byte(raw), Options{Language: lang})
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	if _, err := tool.CompileSchema(def.Name, def.InputSchema); err != nil {
		t.Fatalf("CompileSchema(%s): %v", def.InputSchema, err)
	}
	var root struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(def.InputSchema, &root); err != nil {
		t.Fatal(err)
	}
	return string(root.Properties["p"])
}

const namePat = `"pattern":"^[A-Za-z_$][A-Za-z0-9_$]*(\\.[A-Za-z_$][A-Za-z0-9_$]*)*$","not":{"enum":["true","false","null"]}`

func TestParseFunctionDefTypes(t *testing.T) {
	tests := []struct {
		name, lang, in, want string
	}{
		{"dict is a free-form object", "", `{"type":"dict"}`, `{"type":"object"}`},
		{"dict with properties is closed", "", `{"type":"dict","properties":{"a":{"type":"string"}},"required":["a"]}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`},
		{"explicit additionalProperties kept", "", `{"type":"dict","properties":{},"additionalProperties":true,"required":["x"]}`,
			`{"type":"object","properties":{},"required":["x"],"additionalProperties":true}`},
		{"additionalProperties schema mapped", "", `{"type":"dict","additionalProperties":{"type":"float"}}`,
			`{"type":"object","additionalProperties":{"type":"number"}}`},
		{"HashMap", "", `{"type":"HashMap"}`, `{"type":"object"}`},
		{"object", "", `{"type":"object"}`, `{"type":"object"}`},
		{"float", "", `{"type":"float"}`, `{"type":"number"}`},
		{"double", "", `{"type":"double"}`, `{"type":"number"}`},
		{"number", "", `{"type":"number"}`, `{"type":"number"}`},
		{"tuple", "", `{"type":"tuple","items":{"type":"float"}}`, `{"type":"array","items":{"type":"number"}}`},
		{"Array", "", `{"type":"Array","items":{"type":"String"}}`, `{"type":"array","items":{"type":"string"}}`},
		{"ArrayList", "", `{"type":"ArrayList","items":{"type":"long"}}`, `{"type":"array","items":{"type":"integer"}}`},
		{"array", "", `{"type":"array","minItems":1,"maxItems":3}`, `{"type":"array","minItems":1,"maxItems":3}`},
		{"long", "", `{"type":"long"}`, `{"type":"integer"}`},
		{"integer with bounds", "", `{"type":"integer","minimum":0,"maximum":400}`, `{"type":"integer","minimum":0,"maximum":400}`},
		{"char", "", `{"type":"char"}`, `{"type":"string"}`},
		{"String", "", `{"type":"String"}`, `{"type":"string"}`},
		{"string with format", "", `{"type":"string","format":"date","description":"when"}`,
			`{"type":"string","format":"date","description":"when"}`},
		{"Boolean", "", `{"type":"Boolean"}`, `{"type":"boolean"}`},
		{"boolean with default", "", `{"type":"boolean","default":false}`, `{"type":"boolean","default":false}`},
		{"any", "", `{"type":"any","description":"x"}`, `{"description":"x"}`},
		{"list of types", "", `{"type":["String","null"]}`, `{"type":["string","null"]}`},
		{"list with any", "", `{"type":["string","any"]}`, `{}`},
		{"no type, properties", "", `{"properties":{"a":{"type":"long"}}}`,
			`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}`},
		{"no type, items", "", `{"items":{"type":"float"}}`, `{"type":"array","items":{"type":"number"}}`},
		{"no type at all", "", `{"description":"x"}`, `{"description":"x"}`},
		{"unknown keys dropped", "", `{"type":"string","x-vendor":1,"optional":false}`, `{"type":"string"}`},
		{"enum kept", "", `{"type":"string","enum":["a","b"]}`, `{"type":"string","enum":["a","b"]}`},
		{"default null admits null", "", `{"type":"string","default":null}`, `{"type":["string","null"],"default":null}`},
		{"default null with enum", "", `{"type":"string","enum":["a"],"default":null}`,
			`{"type":["string","null"],"default":null,"enum":["a",null]}`},
		{"array enum constrains items", "", `{"type":"array","items":{"type":"string"},"enum":["a","b"]}`,
			`{"type":"array","items":{"type":"string","enum":["a","b"]}}`},
		{"boolean with string enum", "", `{"type":"boolean","enum":["True","False","dontcare"]}`,
			`{"enum":["True","False","dontcare",true,false]}`},
		{"integer with string enum", "", `{"type":"integer","enum":["1","2","dontcare"]}`,
			`{"enum":["1","2","dontcare",1,2]}`},
		{"float with string enum", "", `{"type":"float","enum":["0.5","x"]}`, `{"enum":["0.5","x",0.5]}`},
		{"nested object", "", `{"type":"dict","properties":{"b":{"type":"dict","properties":{"c":{"type":"tuple"}}}}}`,
			`{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"array"}},"additionalProperties":false}},"additionalProperties":false}`},
		{"property order kept", "", `{"type":"dict","properties":{"z":{"type":"string"},"a":{"type":"string"},"m":{"type":"string"}}}`,
			`{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"},"m":{"type":"string"}},"additionalProperties":false}`},

		{"java integer admits a name", LangJava, `{"type":"integer"}`, `{"type":["integer","string"],` + namePat + `}`},
		{"java long", LangJava, `{"type":"long"}`, `{"type":["integer","string"],` + namePat + `}`},
		{"java boolean", LangJava, `{"type":"boolean"}`, `{"type":["boolean","string"],` + namePat + `}`},
		{"java HashMap admits an expression", LangJava, `{"type":"HashMap"}`, `{"type":["object","string"],"minLength":1}`},
		{"java Array and its items", LangJava, `{"type":"Array","items":{"type":"double"}}`,
			`{"type":["array","string"],"minLength":1,"items":{"type":["number","string"],` + namePat + `}}`},
		{"java String unchanged", LangJava, `{"type":"String"}`, `{"type":"string"}`},
		{"java any unchanged", LangJava, `{"type":"any"}`, `{}`},
		{"java enum unchanged", LangJava, `{"type":"integer","enum":[1,2]}`, `{"type":"integer","enum":[1,2]}`},
		{"java nullable", LangJava, `{"type":"dict","default":null}`, `{"type":["object","null","string"],"default":null,"minLength":1}`},
		{"javascript dict", LangJavaScript, `{"type":"dict","properties":{"a":{"type":"float"}}}`,
			`{"type":["object","string"],"minLength":1,"properties":{"a":{"type":["number","string"],` + namePat + `}},"additionalProperties":false}`},
		{"python dict", LangPython, `{"type":"dict"}`, `{"type":"object"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mappedParam(t, defWithParam(tc.in), tc.lang); got != tc.want {
				t.Errorf("%s maps to\n %s\nwant\n %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseFunctionDefRoot(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no parameters", `{"name":"f"}`, `{"type":"object","properties":{},"additionalProperties":false}`},
		{"null parameters", `{"name":"f","parameters":null}`, `{"type":"object","properties":{},"additionalProperties":false}`},
		{"root without properties is closed", `{"name":"f","parameters":{"type":"dict"}}`,
			`{"type":"object","properties":{},"additionalProperties":false}`},
		{"optional flags leave required", `{"name":"f","parameters":{"type":"dict","properties":{"a":{"type":"string","optional":true},"b":{"type":"string","optional":"True"},"c":{"type":"string"}},"required":["a","b","c","c"]}}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}},"required":["c"],"additionalProperties":false}`},
		{"optional list leaves required", `{"name":"f","parameters":{"type":"dict","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"],"optional":["b"]}}`,
			`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`},
		{"root default null does not admit null", `{"name":"f","parameters":{"type":"object","default":null}}`,
			`{"type":"object","default":null,"properties":{},"additionalProperties":false}`},
		{"wrapped tool", `{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}}`,
			`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}`},
		{"extra members ignored", `{"name":"f","strict":true,"tau2_tool_type":"READ","parameters":{"type":"object","properties":{}}}`,
			`{"type":"object","properties":{},"additionalProperties":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def, err := Parse([]byte(tc.in), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if string(def.InputSchema) != tc.want {
				t.Errorf("got\n %s\nwant\n %s", def.InputSchema, tc.want)
			}
			if def.Name != "f" {
				t.Errorf("name %q", def.Name)
			}
			if _, err := tool.CompileSchema(def.Name, def.InputSchema); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParseFunctionDefUnsupportedType(t *testing.T) {
	tests := []struct {
		name, in  string
		path, typ string
	}{
		{"empty type", defWithParam(`{"type":""}`), "/properties/p", ""},
		{"unknown name", defWithParam(`{"type":"str"}`), "/properties/p", "str"},
		{"names are case-sensitive", defWithParam(`{"type":"Integer"}`), "/properties/p", "Integer"},
		{"number as type", defWithParam(`{"type":5}`), "/properties/p", "5"},
		{"empty list", defWithParam(`{"type":[]}`), "/properties/p", "[]"},
		{"unknown in list", defWithParam(`{"type":["string","weird"]}`), "/properties/p", "weird"},
		{"nested", defWithParam(`{"type":"dict","properties":{"a/b":{"type":"array","items":{"type":"set"}}}}`),
			"/properties/p/properties/a~1b/items", "set"},
		{"root string", `{"name":"f","parameters":{"type":"string"}}`, "", "string"},
		{"root any", `{"name":"f","parameters":{"type":"any"}}`, "", "any"},
		{"root list", `{"name":"f","parameters":{"type":["object","null"]}}`, "", `["object","null"]`},
		{"root array", `{"name":"f","parameters":[]}`, "", "array"},
		{"root scalar", `{"name":"f","parameters":"x"}`, "", "string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in), Options{})
			var ute *UnsupportedTypeError
			if !errors.As(err, &ute) {
				t.Fatalf("got %v, want *UnsupportedTypeError", err)
			}
			if ute.Function != "f" || ute.Path != tc.path || ute.Type != tc.typ {
				t.Errorf("got %+v, want path %q type %q", *ute, tc.path, tc.typ)
			}
			if errors.Is(err, ErrMalformedFuncDef) {
				t.Error("an unsupported type also reads as malformed")
			}
			if !strings.Contains(err.Error(), "function f") {
				t.Errorf("message %q does not name the function", err)
			}
		})
	}
}

func TestParseFunctionDefMalformed(t *testing.T) {
	tests := []struct {
		name, in, lang, want string
	}{
		{"not JSON", `{"name":`, "", ""},
		{"trailing data", `{"name":"f"} {}`, "", "after the value"},
		{"not an object", `["f"]`, "", "JSON object"},
		{"no name", `{"parameters":{}}`, "", "name"},
		{"empty name", `{"name":""}`, "", "name"},
		{"name not a string", `{"name":5}`, "", "name"},
		{"name with a space", `{"name":"a b"}`, "", "letters"},
		{"name starting with a digit", `{"name":"1f"}`, "", "letters"},
		{"description not a string", `{"name":"f","description":5}`, "", "description"},
		{"wrapped function not an object", `{"type":"function","function":5}`, "", "function"},
		{"unknown language", `{"name":"f"}`, "cobol", "language"},
		{"schema not an object", defWithParam(`"string"`), "", "/properties/p"},
		{"properties not an object", defWithParam(`{"type":"dict","properties":[]}`), "", "properties"},
		{"items not an object", defWithParam(`{"type":"array","items":[{"type":"string"}]}`), "", "/properties/p/items"},
		{"required not a list", defWithParam(`{"type":"dict","properties":{},"required":"a"}`), "", "required"},
		{"required names an unknown property", defWithParam(`{"type":"dict","properties":{"a":{"type":"string"}},"required":["b"]}`), "", `"b"`},
		{"root required unknown", `{"name":"f","parameters":{"type":"dict","properties":{},"required":["x"]}}`, "", `"x"`},
		{"empty enum", defWithParam(`{"type":"string","enum":[]}`), "", "enum"},
		{"enum not a list", defWithParam(`{"type":"string","enum":"a"}`), "", "enum"},
		{"bad optional", defWithParam(`{"type":"string","optional":5}`), "", "optional"},
		{"bad optional word", defWithParam(`{"type":"string","optional":"maybe"}`), "", "optional"},
		{"minimum not a number", defWithParam(`{"type":"integer","minimum":"0"}`), "", "minimum"},
		{"negative minLength", defWithParam(`{"type":"string","minLength":-1}`), "", "minLength"},
		{"fractional maxItems", defWithParam(`{"type":"array","maxItems":1.5}`), "", "maxItems"},
		{"zero multipleOf", defWithParam(`{"type":"number","multipleOf":0}`), "", "multipleOf"},
		{"bad pattern", defWithParam(`{"type":"string","pattern":"("}`), "", "pattern"},
		{"null description", defWithParam(`{"type":"string","description":null}`), "", "description"},
		{"duplicate member", defWithParam(`{"type":"string","type":"integer"}`), "", "duplicate"},
		{"reference", defWithParam(`{"$ref":"#/$defs/x"}`), "", "$ref"},
		{"anyOf", defWithParam(`{"anyOf":[{"type":"string"}]}`), "", "anyOf"},
		{"patternProperties", defWithParam(`{"type":"dict","patternProperties":{}}`), "", "patternProperties"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def, err := Parse([]byte(tc.in), Options{Language: tc.lang})
			if !errors.Is(err, ErrMalformedFuncDef) {
				t.Fatalf("got %v (schema %s), want ErrMalformedFuncDef", err, def.InputSchema)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("message %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestParseFunctionDefValidates runs arguments through the compiled
// schema, to check what the mapping means for real calls.
func TestParseFunctionDefValidates(t *testing.T) {
	defs := map[string]struct{ lang, raw string }{
		"py": {LangPython, `{"name":"py","parameters":{"type":"dict","properties":{
			"n":{"type":"integer"},"x":{"type":"float","default":null},"tags":{"type":"tuple","items":{"type":"String"}},
			"flag":{"type":"boolean","enum":["True","False","dontcare"]},"meta":{"type":"dict"},
			"opt":{"type":"string","optional":true}},"required":["n","opt"]}}`},
		"java": {LangJava, `{"name":"java","parameters":{"type":"dict","properties":{
			"n":{"type":"integer"},"m":{"type":"HashMap"},"a":{"type":"Array","items":{"type":"long"}},
			"s":{"type":"String"},"b":{"type":"boolean"}},"required":["n"]}}`},
	}
	tests := []struct {
		def, args string
		ok        bool
	}{
		{"py", `{"n":1,"opt":"o"}`, true},
		{"py", `{"n":1}`, true},
		{"py", `{"n":1.0,"x":2,"tags":["a"],"flag":"dontcare","meta":{"k":[1]}}`, true},
		{"py", `{"n":1,"x":null,"flag":true}`, true},
		{"py", `{"n":1,"flag":"True"}`, true},
		{"py", `{"n":1,"flag":"maybe"}`, false},
		{"py", `{"n":1.5}`, false},
		{"py", `{"n":"1"}`, false},
		{"py", `{"x":1}`, false},
		{"py", `{"n":1,"extra":1}`, false},
		{"py", `{"n":1,"tags":[1]}`, false},
		{"py", `{"n":1,"meta":"k"}`, false},
		{"java", `{"n":3,"m":{"k":"v"},"a":[1,2],"s":"text","b":true}`, true},
		{"java", `{"n":"ResultSet.TYPE_SCROLL_INSENSITIVE","m":"docFields","a":"new long[]{1, 2}","b":"isReady"}`, true},
		{"java", `{"n":"EVENT_THREAD","a":["x.y",3]}`, true},
		{"java", `{"n":"42"}`, false},
		{"java", `{"n":"true"}`, false},
		{"java", `{"n":"a + 1"}`, false},
		{"java", `{"n":1.5}`, false},
		{"java", `{"n":1,"b":"false"}`, false},
		{"java", `{"n":1,"m":""}`, false},
		{"java", `{"n":1,"m":5}`, false},
		{"java", `{"n":1,"s":5}`, false},
	}
	schemas := make(map[string]*tool.Schema)
	for name, d := range defs {
		def, err := Parse([]byte(d.raw), Options{Language: d.lang})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if schemas[name], err = tool.CompileSchema(name, def.InputSchema); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, tc := range tests {
		err := schemas[tc.def].Validate(tc.def, []byte(tc.args))
		var ae *tool.ArgsError
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s %s: %v", tc.def, tc.args, err)
		case !tc.ok && !errors.As(err, &ae):
			t.Errorf("%s %s: got %v, want *ArgsError", tc.def, tc.args, err)
		}
	}
}

func TestFuncDefSpec(t *testing.T) {
	def, err := Parse([]byte(`{"name":"math.factorial","description":"n!","parameters":{"type":"dict","properties":{"n":{"type":"integer"}},"required":["n"]}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		risk    tool.Risk
		confirm tool.Confirm
	}{{tool.RiskRead, tool.ConfirmNever}, {tool.RiskWriteSafe, tool.ConfirmAlways}, {tool.RiskWriteFull, tool.ConfirmAlways}} {
		spec := def.Spec(tc.risk)
		if spec.Name != def.Name || spec.Description != "n!" || string(spec.InputSchema) != string(def.InputSchema) ||
			spec.Risk != tc.risk || spec.Confirm != tc.confirm {
			t.Errorf("Spec(%s) = %+v", tc.risk, spec)
		}
		reg, err := tool.NewRegistry(funcDefTool{spec})
		if err != nil {
			t.Fatalf("Spec(%s): %v", tc.risk, err)
		}
		e, _ := reg.Lookup(def.Name)
		if err := e.Schema.Validate(def.Name, []byte(`{"n":5}`)); err != nil {
			t.Error(err)
		}
	}
}

func TestParseRisk(t *testing.T) {
	tests := []struct {
		label string
		want  tool.Risk
		ok    bool
	}{
		{"read", tool.RiskRead, true},
		{"READ", tool.RiskRead, true},
		{"Read", tool.RiskRead, true},
		{"write", tool.RiskWriteFull, true},
		{"WRITE", tool.RiskWriteFull, true},
		{"write:safe", tool.RiskWriteSafe, true},
		{"write:full", tool.RiskWriteFull, true},
		{"GENERIC", "", false},
		{"THINK", "", false},
		{"", "", false},
		{"WRITE:SAFE", "", false},
	}
	for _, tc := range tests {
		got, err := ParseRisk(tc.label)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseRisk(%q) = %q, %v; want %q, ok %v", tc.label, got, err, tc.want, tc.ok)
		}
	}
}
