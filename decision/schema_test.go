package decision

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSchemasWriteToolBeforeSay: in every form of the decision schema
// "tool" and "args" come before "say", so a model writing in the schema's
// order says whether it proposes anything before it writes the text.
func TestSchemasWriteToolBeforeSay(t *testing.T) {
	s, err := BuildSchemas([]ToolSchema{{Name: "create_task", Input: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	for name, schema := range map[string][]byte{"file": SchemaJSON, "catalog": s.JSON, "strict": s.Strict} {
		props := string(schema)[strings.Index(string(schema), `"properties"`):]
		tool, args, say := strings.Index(props, `"tool":`), strings.Index(props, `"args":`), strings.Index(props, `"say":`)
		if tool < 0 || args < 0 || say < 0 || !(tool < args && args < say) {
			t.Errorf("%s schema: tool at %d, args at %d, say at %d: %s", name, tool, args, say, schema)
		}
	}
}
