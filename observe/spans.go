package observe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/turn"
)

// Span names. A step span is named stepSpanPrefix + the step's name
// ("arbiter.lock", "arbiter.decide:decide"); a model call "chat <model>"
// and a tool execution "execute_tool <tool>", as the GenAI semantic
// conventions name them.
const (
	TurnSpanName   = "arbiter.turn"
	stepSpanPrefix = "arbiter."
)

// Attribute keys of the spans besides the gen_ai.* ones of the semantic
// conventions.
const (
	AttrTurnID             = attribute.Key("arbiter.turn.id")
	AttrTenant             = attribute.Key("arbiter.tenant")
	AttrRoute              = attribute.Key("arbiter.route")
	AttrStatus             = attribute.Key("arbiter.status")
	AttrChannel            = attribute.Key("arbiter.channel")
	AttrLockWaitMS         = attribute.Key("arbiter.lock_wait_ms")
	AttrCostUSD            = attribute.Key("arbiter.cost_usd")
	AttrLLMCalls           = attribute.Key("arbiter.llm_calls")
	AttrDecidedByProvider  = attribute.Key("arbiter.decided_by.provider")
	AttrDecidedByModel     = attribute.Key("arbiter.decided_by.model")
	AttrConfirmationResult = attribute.Key("arbiter.confirmation.outcome")
	AttrConfirmationTool   = attribute.Key("arbiter.confirmation.tool")
	AttrRepair             = attribute.Key("arbiter.repair") // "repaired" or "failed"
	AttrStep               = attribute.Key("arbiter.step")
	AttrStepNote           = attribute.Key("arbiter.step.note")
	AttrAttempt            = attribute.Key("arbiter.attempt")
	AttrOperation          = attribute.Key("arbiter.operation")
	AttrStrategy           = attribute.Key("arbiter.strategy")
	AttrNote               = attribute.Key("arbiter.note")
	AttrToolStatus         = attribute.Key("arbiter.tool.status")
	AttrToolReused         = attribute.Key("arbiter.tool.reused")
	AttrVetoGuard          = attribute.Key("arbiter.veto.guard")
	AttrVetoReason         = attribute.Key("arbiter.veto.reason")
	AttrVetoTool           = attribute.Key("arbiter.veto.tool")
	AttrDecision           = attribute.Key("arbiter.decision")
	AttrSay                = attribute.Key("arbiter.say")

	// AttrGenAISystem is the older name of gen_ai.provider.name, still
	// read by some backends; both are set.
	AttrGenAISystem = attribute.Key("gen_ai.system")
)

// Event names on the turn span.
const (
	EventVeto     = "arbiter.veto"
	EventDecision = "arbiter.decision" // only with Config.CaptureContent
	EventReply    = "arbiter.reply"    // only with Config.CaptureContent
)

// Step name prefixes the engine uses.
const (
	stepDecide  = "decide:"
	stepExecute = "execute:"
)

// vetoUnknownTool is the veto reason whose tool name came from the model.
const vetoUnknownTool = "unknown_tool"

// Observe records one finished turn as spans. The trace is complete when
// it arrives, so the spans are built after the fact with the turn's own
// timestamps:
//
//	arbiter.turn                  the turn (root of a new trace, kind internal)
//	├─ arbiter.<step>             each pipeline step but execute:* (arbiter.lock,
//	│  │                          arbiter.dedupe, arbiter.load_memory, arbiter.assemble, ...)
//	│  └─ chat <model>            under arbiter.decide:<operation>: each model call made
//	│                             for it, first, retry, fallback or skipped (kind client)
//	└─ execute_tool <tool>        each tool execution, in place of its execute:<tool> step
//
// A model call whose operation has no decide step hangs off the turn.
// Child spans are clamped into their parent's interval; model calls timed
// by another clock than the engine's are laid out one after another from
// the start of their step. The turn span has the turn id, tenant, route,
// status, channel, conversation (see Config.PlainConversationID), lock
// wait, cost and deciding model as attributes, an event per veto, and an
// error status when the turn failed. User and message ids are not
// recorded (an error message, recorded only with CaptureContent, may name
// them). Observe reads t and neither keeps nor modifies it.
func (tr *Tracing) Observe(t *turn.Trace) {
	if !tr.Enabled() || t == nil {
		return
	}
	dur := millis(t.DurationMS)
	start := t.StartedAt
	if start.IsZero() {
		start = time.Now().Add(-dur)
	}
	end := start.Add(dur)
	ctx, root := tr.tracer.Start(context.Background(), TurnSpanName,
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(start),
		trace.WithAttributes(tr.turnAttributes(t)...))
	if !root.IsRecording() {
		root.End(trace.WithTimestamp(end))
		return
	}
	b := &spanBuilder{tr: tr, t: t, root: window{parent: trace.SpanFromContext(ctx), start: start, end: end, cursor: start}}
	b.steps()
	b.calls()
	b.tools()
	b.events(root)
	if t.Status.Failed() {
		root.SetAttributes(semconv.ErrorTypeKey.String(string(t.Status)))
		root.SetStatus(codes.Error, tr.describe(string(t.Status), t.Error))
	}
	root.End(trace.WithTimestamp(end))
}

// window is a parent span and the interval its children must fit in.
type window struct {
	parent     trace.Span
	op         string // the operation of a decide step
	start, end time.Time
	cursor     time.Time // end of the last child laid out in it
}

// context is a context whose span is the window's: its children's parent.
func (w *window) context() context.Context {
	return trace.ContextWithSpan(context.Background(), w.parent)
}

// spanBuilder builds the child spans of one turn.
type spanBuilder struct {
	tr      *Tracing
	t       *turn.Trace
	root    window
	decides []*window
}

// steps records one span per step except tool executions, and remembers
// the decide steps as parents of the model calls.
func (b *spanBuilder) steps() {
	for _, s := range b.t.Steps {
		if strings.HasPrefix(s.Name, stepExecute) {
			continue
		}
		s0, s1 := b.root.fit(s.At, millis(s.DurationMS))
		attrs := []attribute.KeyValue{AttrStep.String(s.Name)}
		if s.Note != "" {
			attrs = append(attrs, AttrStepNote.String(s.Note))
		}
		ctx, span := b.tr.tracer.Start(b.root.context(), stepSpanPrefix+s.Name,
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(s0),
			trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(s1))
		if op, ok := strings.CutPrefix(s.Name, stepDecide); ok {
			b.decides = append(b.decides, &window{parent: trace.SpanFromContext(ctx), op: op, start: s0, end: s1, cursor: s0})
		}
	}
}

// calls records one span per model call under the decide step it was
// made for.
func (b *spanBuilder) calls() {
	for i := range b.t.LLMCalls {
		c := &b.t.LLMCalls[i]
		w := b.parentOf(c)
		s0, s1 := w.place(c.At, millis(c.DurationMS))
		name := "chat"
		if c.Model != "" {
			name += " " + c.Model
		}
		_, span := b.tr.tracer.Start(w.context(), name,
			trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(s0),
			trace.WithAttributes(b.tr.callAttributes(c)...))
		if c.Status != "ok" {
			span.SetStatus(codes.Error, b.tr.describe(c.Status, c.Error))
		}
		span.End(trace.WithTimestamp(s1))
	}
}

// parentOf finds the decide step a call belongs to: the one of its
// operation whose interval holds the call's start, else the first of its
// operation with room left, else the last of its operation, else the turn.
func (b *spanBuilder) parentOf(c *store.LLMCall) *window {
	var first, last *window
	for _, w := range b.decides {
		if w.op != c.Operation {
			continue
		}
		if w.holds(c.At) {
			return w
		}
		if first == nil && w.cursor.Before(w.end) {
			first = w
		}
		last = w
	}
	switch {
	case first != nil:
		return first
	case last != nil:
		return last
	}
	return &b.root
}

// tools records one span per tool execution, timed by its execute step.
func (b *spanBuilder) tools() {
	steps := map[string][]turn.StepTrace{}
	for _, s := range b.t.Steps {
		if name, ok := strings.CutPrefix(s.Name, stepExecute); ok {
			steps[name] = append(steps[name], s)
		}
	}
	calls := map[string][]store.ToolCall{}
	for _, c := range b.t.ToolCalls {
		calls[c.Tool] = append(calls[c.Tool], c)
	}
	seen := map[string]int{}
	for i := range b.t.Executed {
		ex := &b.t.Executed[i]
		k := seen[ex.Tool]
		seen[ex.Tool]++
		dur := millis(ex.DurationMS)
		var at time.Time
		switch {
		case k < len(steps[ex.Tool]):
			at = steps[ex.Tool][k].At
		case k < len(calls[ex.Tool]):
			at = calls[ex.Tool][k].At
		default:
			at = b.root.end.Add(-dur)
		}
		s0, s1 := b.root.fit(at, dur)
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolName(ex.Tool),
			AttrToolStatus.String(ex.Status),
		}
		if ex.Reused {
			attrs = append(attrs, AttrToolReused.Bool(true))
		}
		failed := toolFailed(ex.Status)
		if failed {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(ex.Status)))
		}
		_, span := b.tr.tracer.Start(b.root.context(), "execute_tool "+ex.Tool,
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(s0),
			trace.WithAttributes(attrs...))
		if failed {
			var msg string
			if ex.Result != nil {
				msg = ex.Result.Error
			}
			span.SetStatus(codes.Error, b.tr.describe(errorType(ex.Status), msg))
		}
		span.End(trace.WithTimestamp(s1))
	}
}

// events adds the vetoes and, when content is captured, the decision and
// the reply to the turn span. Vetoes and the decision are dated at the
// end of the last decide step (the turn's end when there is none), the
// reply at the turn's end.
func (b *spanBuilder) events(root trace.Span) {
	decided := b.root.end
	if n := len(b.decides); n > 0 {
		decided = b.decides[n-1].end
	}
	for _, v := range b.t.Vetoes {
		attrs := []attribute.KeyValue{AttrVetoGuard.String(v.Guard), AttrVetoReason.String(v.Reason)}
		if v.Tool != "" && (v.Reason != vetoUnknownTool || b.tr.capture) {
			attrs = append(attrs, AttrVetoTool.String(v.Tool))
		}
		root.AddEvent(EventVeto, trace.WithTimestamp(decided), trace.WithAttributes(attrs...))
	}
	if !b.tr.capture {
		return
	}
	if d := strings.TrimSpace(string(b.t.Decision)); d != "" && d != "null" {
		root.AddEvent(EventDecision, trace.WithTimestamp(decided), trace.WithAttributes(AttrDecision.String(d)))
	}
	if b.t.Say != "" {
		root.AddEvent(EventReply, trace.WithTimestamp(b.root.end), trace.WithAttributes(AttrSay.String(b.t.Say)))
	}
}

// turnAttributes are the turn span's attributes.
func (tr *Tracing) turnAttributes(t *turn.Trace) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		AttrTurnID.String(t.TurnID),
		AttrTenant.String(t.Tenant),
		AttrRoute.String(string(t.Route)),
		AttrStatus.String(string(t.Status)),
		semconv.GenAIConversationID(tr.conversationID(t.Tenant, t.ConversationID)),
		AttrLockWaitMS.Int64(t.LockWaitMS),
		AttrLLMCalls.Int(len(t.LLMCalls)),
		AttrCostUSD.Float64(t.CostUSD),
	}
	if t.Channel != "" {
		attrs = append(attrs, AttrChannel.String(t.Channel))
	}
	if d := t.DecidedBy; d != nil {
		attrs = append(attrs, AttrDecidedByProvider.String(d.Provider), AttrDecidedByModel.String(d.Model))
	}
	if c := t.Confirmation; c != nil {
		attrs = append(attrs, AttrConfirmationResult.String(string(c.Outcome)))
		if c.Tool != "" {
			attrs = append(attrs, AttrConfirmationTool.String(c.Tool))
		}
	}
	if r := t.Repair; r != nil {
		outcome := "failed"
		if r.Repaired {
			outcome = "repaired"
		}
		attrs = append(attrs, AttrRepair.String(outcome))
	}
	return attrs
}

// callAttributes are a model call span's attributes.
func (tr *Tracing) callAttributes(c *store.LLMCall) []attribute.KeyValue {
	attempt := c.Attempt
	if attempt == "" {
		attempt = llm.AttemptFirst
	}
	ok := c.Status == "ok"
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(c.Provider),
		AttrGenAISystem.String(c.Provider),
		semconv.GenAIRequestModel(c.Model),
		AttrAttempt.String(attempt),
		AttrCostUSD.Float64(c.CostUSD),
	}
	if ok {
		attrs = append(attrs, semconv.GenAIResponseModel(c.Model))
	}
	if ok || c.InputTokens > 0 || c.OutputTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(c.InputTokens), semconv.GenAIUsageOutputTokens(c.OutputTokens))
	}
	if c.CachedInputTokens > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(c.CachedInputTokens))
	}
	if c.Operation != "" {
		attrs = append(attrs, AttrOperation.String(c.Operation))
	}
	if c.Strategy != "" {
		attrs = append(attrs, AttrStrategy.String(c.Strategy))
	}
	if c.Note != "" {
		attrs = append(attrs, AttrNote.String(c.Note))
	}
	if !ok {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(c.Status)))
	}
	return attrs
}

// conversationID is the gen_ai.conversation.id of a turn: the id itself
// with PlainConversationID, else a pseudonym scoped to the tenant.
func (tr *Tracing) conversationID(tenant, id string) string {
	if tr.plainID || id == "" {
		return id
	}
	sum := sha256.Sum256([]byte(tenant + "\x00" + id))
	return hex.EncodeToString(sum[:8])
}

// describe is a span status description: the error class, and with
// content capture the message too.
func (tr *Tracing) describe(class, msg string) string {
	if tr.capture && msg != "" {
		return class + ": " + msg
	}
	return class
}

// toolFailed reports whether a tool status is a failure, as opposed to an
// outcome such as not_found or ambiguous.
func toolFailed(status string) bool {
	switch status {
	case "ok", "not_found", "ambiguous":
		return false
	}
	return true
}

// errorType is an error.type value; an empty class is "_OTHER", as the
// semantic conventions say.
func errorType(class string) string {
	if class == "" {
		return "_OTHER"
	}
	return class
}

// holds reports whether t falls in the window (one millisecond of slack at
// the end, for durations rounded down to whole milliseconds).
func (w *window) holds(t time.Time) bool {
	return !t.IsZero() && !t.Before(w.start) && !t.After(w.end.Add(time.Millisecond))
}

// fit clamps an interval starting at at and lasting d into the window.
func (w *window) fit(at time.Time, d time.Duration) (time.Time, time.Time) {
	if at.IsZero() {
		at = w.start
	}
	s0 := clampTime(at, w.start, w.end)
	return s0, clampTime(s0.Add(d), s0, w.end)
}

// place lays out a child in the window: at its own start when the window
// holds it, otherwise after the previous child.
func (w *window) place(at time.Time, d time.Duration) (time.Time, time.Time) {
	if !w.holds(at) {
		at = w.cursor
	}
	s0, s1 := w.fit(at, d)
	if s1.After(w.cursor) {
		w.cursor = s1
	}
	return s0, s1
}

func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

// millis converts a duration in milliseconds; negative is zero.
func millis(ms int64) time.Duration {
	if ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
