package decision

import (
	"encoding/json"
	"strings"
	"testing"
)

// Tests at the edges of the contract: the exact limits, the shortest
// shapes, and the schema spellings a catalog may use. Each pins a line a
// one-character change would break without another test noticing.

// An output of exactly MaxOutputBytes is read; one byte more is refused.
func TestOutputSizeLimit(t *testing.T) {
	obj := `{"say":"ok","tool":null}`
	at := obj + strings.Repeat(" ", MaxOutputBytes-len(obj))
	if d, err := Parse(at, allowed); err != nil || d.Say != "ok" {
		t.Errorf("an output of exactly %d bytes: %+v, %v", MaxOutputBytes, d, err)
	}
	if _, err := Parse(at+" ", allowed); err == nil {
		t.Errorf("an output of %d bytes was read", MaxOutputBytes+1)
	}
}

// Prose brackets that are not JSON are skipped whole, however short, and
// the object right after them is still found.
func TestProseBracketsBeforeTheObject(t *testing.T) {
	for _, in := range []string{
		`{this}{"say":"y"}`,     // the object right after the group
		`{] {"say":"y"}`,        // the shortest group that closes
		`see [a}b] {"say":"y"}`, // closed by the other bracket kind
	} {
		d, err := Parse(in, allowed)
		if err != nil || d.Say != "y" {
			t.Errorf("Parse(%q) = %+v, %v; want say y", in, d, err)
		}
	}
}

// Arguments given as a string must hold an object: an empty or blank
// string is refused like any other non-object.
func TestArgsAsEmptyString(t *testing.T) {
	for _, args := range []string{`""`, `"   "`, `"[]"`} {
		in := `{"say":"","tool":"create_task","args":` + args + `}`
		if d, err := Parse(in, allowed); err == nil {
			t.Errorf("args %s accepted as %s", args, d.Args)
		}
	}
}

// A button value of exactly MaxButtonValue bytes is kept; one byte more
// drops the button.
func TestButtonValueLimit(t *testing.T) {
	in := `{"say":"x","buttons":[{"label":"a","value":"` + strings.Repeat("v", MaxButtonValue) + `"},` +
		`{"label":"b","value":"` + strings.Repeat("w", MaxButtonValue+1) + `"}]}`
	d, err := Parse(in, allowed)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Buttons) != 1 || d.Buttons[0].Label != "a" || len(d.Buttons[0].Value) != MaxButtonValue {
		t.Errorf("buttons %+v, want only a with its %d-byte value", d.Buttons, MaxButtonValue)
	}
}

// A catalog with no tools (a role that may only talk) still has a schema:
// the tool can only be null.
func TestSchemasOfAnEmptyCatalog(t *testing.T) {
	s, err := BuildSchemas(nil)
	if err != nil {
		t.Fatal(err)
	}
	say := []byte(`{"say":"hi","tool":null,"args":null,"done":false,"newTopic":false,"buttons":[]}`)
	validateAgainst(t, s.JSON, say)
	if validates(s.JSON, []byte(`{"say":"","tool":"create_task","args":{},"done":false,"newTopic":false,"buttons":[]}`)) {
		t.Error("the schema of an empty catalog names a tool")
	}
}

// Types spelled as lists: ["object","null"] is an object whose fields
// strict mode lists, and an optional ["string"] becomes nullable.
func TestStrictSchemaOfTypeLists(t *testing.T) {
	tools := []ToolSchema{{Name: "create_task", Input: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["title","meta"],` +
		`"properties":{"title":{"type":["string"]},"note":{"type":["string"]},` +
		`"meta":{"type":["object","null"],"additionalProperties":false,"properties":{"tag":{"type":"string"}}}}}`)}}
	s, err := BuildSchemas(tools)
	if err != nil || s.Strict == nil {
		t.Fatalf("strict schema: %v (nil: %v)", err, s.Strict == nil)
	}
	doc := func(args string) []byte {
		return []byte(`{"say":"","tool":"create_task","args":` + args + `,"done":false,"newTopic":false,"buttons":[]}`)
	}
	// Every field present (strict), the optional one as null, the nested
	// object's own field present.
	validateAgainst(t, s.Strict, doc(`{"title":"x","note":null,"meta":{"tag":"a"}}`))
	for _, bad := range []string{
		`{"title":"x","note":null,"meta":{}}`,                  // the nested object's field missing
		`{"title":"x","note":null,"meta":{"tag":"a","x":1}}`,   // an extra nested field
		`{"title":null,"note":null,"meta":{"tag":"a"}}`,        // a required field null
		`{"title":"x","note":null,"meta":{"tag":"a"},"y":"z"}`, // an extra field
	} {
		if validates(s.Strict, doc(bad)) {
			t.Errorf("strict schema accepted args %s", bad)
		}
	}
}
