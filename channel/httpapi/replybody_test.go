package httpapi

import (
	"reflect"
	"testing"

	"github.com/arbiterhq/arbiter/chat"
)

// A reply's lists are never null on the wire, and a list the turn filled
// reaches the client as it was: the approvals a write waits for included.
func TestReplyBodyKeepsWhatTheTurnFilled(t *testing.T) {
	empty := replyBody(chat.Outbound{})
	if empty.Buttons == nil || empty.Executed == nil || empty.Actions == nil || empty.Approvals == nil {
		t.Fatalf("an empty reply has a null list: %+v", empty)
	}
	approvals := []chat.ApprovalRef{{ID: "a1", Tool: "refund", Status: "pending"}}
	got := replyBody(chat.Outbound{Approvals: approvals})
	if !reflect.DeepEqual(got.Approvals, approvals) {
		t.Fatalf("approvals = %+v, want %+v", got.Approvals, approvals)
	}
}
