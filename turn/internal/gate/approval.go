package gate

import (
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/store"
)

// Approves reports whether approver is of the roles that decide a — the
// roles the tool names — whoever asked for it.
func Approves(approver chat.Identity, a store.Action) bool {
	return slices.Contains(a.Approvers, approver.Role)
}

// MayDecide reports whether approver may decide a: of its approver roles,
// and not its requester (four eyes: whoever asked for the action does not
// approve it).
func MayDecide(approver chat.Identity, a store.Action) bool {
	return Approves(approver, a) && approver.UserID != a.Requester.UserID
}

// Expired reports whether a is a proposal past its time at now; a decided
// action no longer expires.
func Expired(a store.Action, now time.Time) bool {
	return a.Status == store.ActionProposed && !now.Before(a.ExpiresAt)
}

// Decided is the proposal a as approver decides it at now: approved or
// rejected, by whom and when. MayDecide, and a still proposed and not
// Expired, are the caller's to check first.
func Decided(a store.Action, approver chat.Identity, approve bool, now time.Time) store.Action {
	next := a
	next.Status, next.DecidedBy, next.DecidedAt, next.UpdatedAt = store.ActionRejected, approver.UserID, now, now
	if approve {
		next.Status = store.ActionApproved
	}
	return next
}
