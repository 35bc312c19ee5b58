package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A turn's record read without turns:read_all loses the reasoning a mode
// recorded in its section (the interviewer's, or a program's mode's) and
// says it is hidden; everything else reads as stored, and a record that
// cannot be read is never shown as it is.
func TestHideReasoning(t *testing.T) {
	for _, c := range []struct{ name, rec, want string }{
		{"no interview", `{"turn_id":"t1","say":"the \"interview\" word"}`, `{"turn_id":"t1","say":"the \"interview\" word"}`},
		{"interview without reasoning", `{"turn_id":"t1","interview":{"asked":2}}`, `{"turn_id":"t1","interview":{"asked":2}}`},
		{"reasoning", `{"turn_id":"t1","interview":{"asked":2,"reasoning":"internal"}}`, `{"turn_id":"t1","interview":{"asked":2,"reasoning_hidden":true}}`},
		{"a program's mode", `{"turn_id":"t1","triage":{"reasoning":"internal","queue":"b"},"interview":{"reasoning":"also"}}`,
			`{"turn_id":"t1","triage":{"queue":"b","reasoning_hidden":true},"interview":{"reasoning_hidden":true}}`},
		{"the word in a text", `{"turn_id":"t1","say":"my \"reasoning\" is mine","decision":{"say":"ok"}}`, `{"turn_id":"t1","say":"my \"reasoning\" is mine","decision":{"say":"ok"}}`},
		{"a section not an object", `{"turn_id":"t1","interview":"internal","reasoning":"top"}`, `{"turn_id":"t1","interview":"internal","reasoning":"top"}`},
		{"a section as a list", `{"turn_id":"t1","interview":[{"asked":1},{"reasoning":"internal"}]}`, `{"error":"the record cannot be shown"}`},
		{"a tool's result with its own reasoning", `{"turn_id":"t1","executed":[{"tool":"t","result":{"data":{"reasoning":"the tool's"}}}],"steps":[1,"x"]}`,
			`{"turn_id":"t1","executed":[{"tool":"t","result":{"data":{"reasoning":"the tool's"}}}],"steps":[1,"x"]}`},
		{"a null reasoning", `{"turn_id":"t1","interview":{"reasoning":null}}`, `{"turn_id":"t1","interview":{"reasoning_hidden":true}}`},
		{"not JSON", `{"interview": internal`, `{"error":"the record cannot be shown"}`},
		{"not JSON, with reasoning", `{"interview":{"reasoning":"internal"`, `{"error":"the record cannot be shown"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hideReasoning(json.RawMessage(c.rec))
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("not JSON: %s", got)
			}
			_ = json.Unmarshal([]byte(c.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("hideReasoning(%s) = %s, want %s", c.rec, got, c.want)
			}
		})
	}
}
