package turn

// The names a turn's record uses, exported once so that observers
// (metrics, traces, dashboards) match on them instead of re-declaring
// strings.

// Route is how a turn was handled.
type Route string

// Routes.
const (
	RouteModel       Route = "model"        // the model decided
	RouteNoModel     Route = "no_model"     // free text with no model configured
	RouteConfirm     Route = "confirm"      // an affirmative answered a pending action (or nothing)
	RouteCancel      Route = "cancel"       // a negative cancelled a pending action
	RouteStaleButton Route = "stale_button" // a button of an action no longer waiting
	RouteDuplicate   Route = "duplicate"    // a redelivered message answered from its first turn
	RouteCardLink    Route = "card_link"    // a forwarded card link read without a model
	RouteRecovered   Route = "recovered"    // a redelivery finished its interrupted turn's writes
	RouteInterrupted Route = "interrupted"  // the record of a turn whose process ended
	RouteCall        Route = "call"         // a client program's own call
	RouteResume      Route = "resume"       // an approved (or rejected) action carried out in its conversation
	RouteChoice      Route = "choice"       // a button completing the conversation's stored draft
	RouteCaseClosed  Route = "case_closed"  // an integration closed the conversation's case, and said nothing more
	RouteText        Route = "text"         // free text (before the model is asked)
	RouteAffirm      Route = "affirm"
	RouteDeny        Route = "deny"
	RouteEmpty       Route = "empty"
)

// RouteCommand is the route of slash command name ("command:/tasks").
func RouteCommand(name string) Route { return Route("command:" + name) }

// Status is how a turn ended.
type Status string

// Statuses; a turn that could not reply has StatusFailed followed by the
// step that failed ("failed:lock").
const (
	StatusOK            Status = "ok"
	StatusInvalidOutput Status = "invalid_output" // the model broke the contract twice
	StatusFailed        Status = "failed"         // every model failed, or (with a step) no reply was possible
	StatusInterrupted   Status = "interrupted"    // the process ended before the turn completed
	// StatusNeedsReview: a person takes the task over (Trace.Review says
	// why); the user was told so and got no invented answer.
	StatusNeedsReview Status = "needs_review"
)

// ReviewReason says why a task was handed to a person.
type ReviewReason string

// Review reasons: a limit of the assistant reached, a dependency that
// stayed down, or a model that could not be used.
const (
	ReviewModelCalls     ReviewReason = "model_calls"
	ReviewToolCalls      ReviewReason = "tool_calls"
	ReviewDeadline       ReviewReason = "deadline"
	ReviewResultBytes    ReviewReason = "result_bytes"
	ReviewTotalBytes     ReviewReason = "total_bytes"
	ReviewRepeatedCall   ReviewReason = "repeated_call"
	ReviewDependencyDown ReviewReason = "dependency_down"
	ReviewModelDown      ReviewReason = "model_down"
	ReviewInvalidOutput  ReviewReason = "invalid_output"
	// ReviewMissingFacts: the model handed the case over itself (a hand-off
	// tool such as hand_off_to_human), saying what is missing.
	ReviewMissingFacts ReviewReason = "missing_facts"
	// ReviewUnconfirmedClaim: the reply says an action happened that no
	// successful call of its tool confirms (tool.Spec.Claims).
	ReviewUnconfirmedClaim ReviewReason = "unconfirmed_claim"
)

// FailedAt is the status of a turn that could not reply because step
// failed.
func FailedAt(step Step) Status { return Status(string(StatusFailed) + ":" + string(step)) }

// Step names a step of the pipeline in the trace's timeline; steps about
// one tool carry its name after a colon ("execute:create_task").
type Step string

// Steps, in pipeline order.
const (
	StepRoute           Step = "route"
	StepLock            Step = "lock"
	StepDedupe          Step = "dedupe"
	StepLoadMemory      Step = "load_memory"
	StepLoadInterrupted Step = "load_interrupted"
	StepReadLink        Step = "read_link"
	StepAssemble        Step = "assemble"
	StepDecide          Step = "decide"
	StepValidate        Step = "validate"
	StepGuard           Step = "guard"
	StepPreview         Step = "preview"
	StepExecute         Step = "execute"
	StepReconcile       Step = "reconcile" // an unclear write read back from its system
	StepReply           Step = "reply"
	StepCommit          Step = "commit" // names a failure only: the record rides in the commit
)

// Outcome is what happened to a pending action in a turn.
type Outcome string

// Outcomes of ConfirmationTrace.
const (
	OutcomeProposed       Outcome = "proposed"
	OutcomeConfirmed      Outcome = "confirmed"
	OutcomeCancelled      Outcome = "cancelled"
	OutcomeExpired        Outcome = "expired"
	OutcomeDropped        Outcome = "dropped"      // another message came instead of an answer
	OutcomeStaleButton    Outcome = "stale_button" // a button of an action no longer waiting
	OutcomeRefused        Outcome = "refused"      // confirmed, but no longer allowed
	OutcomeNothingPending Outcome = "nothing_pending"
	OutcomeNotYetShown    Outcome = "not_yet_shown" // a typed "yes" that came before the action was shown
)

// Outcomes lists every Outcome.
var Outcomes = []Outcome{OutcomeProposed, OutcomeConfirmed, OutcomeCancelled, OutcomeExpired, OutcomeDropped,
	OutcomeStaleButton, OutcomeRefused, OutcomeNothingPending, OutcomeNotYetShown}

// Failed reports whether s is StatusFailed, with or without a step.
func (s Status) Failed() bool {
	return s == StatusFailed || len(s) > len(StatusFailed) && s[:len(StatusFailed)+1] == StatusFailed+":"
}
