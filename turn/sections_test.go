package turn

import (
	"encoding/json"
	"strings"
	"testing"
)

// A mode's section is written beside the engine's keys under the mode's
// name, as it stands when the record is written, and read back as raw
// text that Section decodes; the engine's keys are not taken for one.
func TestSectionsAtTheRecordsTopLevel(t *testing.T) {
	type tally struct {
		Count int `json:"count"`
	}
	live := &tally{Count: 1}
	tr := &Trace{TurnID: "t1", Status: StatusOK, Sections: Sections{"tally": live, "abacus": json.RawMessage(`{"beads":3}`)}}
	live.Count = 2 // after it was recorded
	raw, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(raw), `,"abacus":{"beads":3},"tally":{"count":2}}`) || !strings.HasPrefix(string(raw), `{"turn_id":"t1"`) {
		t.Fatalf("record %s", raw)
	}
	var back Trace
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	var got tally
	if back.TurnID != "t1" || len(back.Sections) != 2 || !back.Section("tally", &got) || got.Count != 2 {
		t.Errorf("read back %q, sections %v, tally %+v", back.TurnID, back.Sections, got)
	}
	if back.Section("loop", &got) || back.Section("abacus", &[]int{}) {
		t.Error("Section decoded what is not there, or into the wrong type")
	}
	if !tr.Section("tally", &got) || got.Count != 2 {
		t.Errorf("a live section reads %+v", got)
	}
	tr.Sections["broken"] = func() {}
	if _, err := json.Marshal(tr); err == nil || !strings.Contains(err.Error(), "section of mode broken") {
		t.Errorf("an unencodable section: err = %v", err)
	}
}
