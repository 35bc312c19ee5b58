package observe

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/store"
	"github.com/arbiterhq/arbiter/turn"
)

// questionOutcomes are the answers of arbiter_questions_total: a choice
// the user pressed (accept, decline, cancel, skip), "answered" for a value
// or typed text, "unanswered" when the wait ended first, and "no_channel"
// when the channel could not ask.
var questionOutcomes = []string{"accept", "decline", "cancel", "skip", "answered", "unanswered", "no_channel"}

// Histogram buckets, in seconds.
var (
	// turnBuckets spans a deterministic route (milliseconds) to a turn
	// with retries and fallbacks (the 90 s turn timeout).
	turnBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 90}
	// lockBuckets spans an uncontended lock to the 30 s lock wait limit.
	lockBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// llmBuckets spans a cached answer to the 40 s model timeout.
	llmBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 40}
	// toolBuckets spans a local lookup to a slow remote write.
	toolBuckets = []float64{0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Metrics turns finished turns into Prometheus metrics. Create it with
// NewMetrics; pass its Observe method (alone or through Observer) as
// turn.Config.Observe. It is safe for concurrent use; a nil *Metrics
// observes nothing.
//
// Every metric is prefixed arbiter_. Label values come only from bounded
// sets: routes, statuses, providers, models, tools, guards, reasons,
// outcomes, channels and tenants, each capped (values past the cap count
// as "other"; an empty value is "unknown"). No turn, user, chat or message
// id is ever a label. The metrics:
//
//	arbiter_turns_total{tenant,route,status}             counter: finished turns
//	arbiter_turn_duration_seconds{route,status}          histogram: turn latency, lock wait included
//	arbiter_lock_wait_seconds                            histogram: wait for the conversation lock, per turn
//	arbiter_llm_calls_total{provider,model,status,attempt} counter: model calls; status is ok or the error kind,
//	                                                     attempt is first, retry, fallback or skipped
//	arbiter_llm_call_duration_seconds{provider,model}    histogram: duration of model calls made (skipped excluded)
//	arbiter_llm_retries_total{provider,model}            counter: calls that retried a model after a transient error
//	arbiter_llm_fallbacks_total{provider,model}          counter: calls to a next model after a failure (labels: the model fallen back to)
//	arbiter_llm_blocked_total{provider,model}            counter: calls skipped because the provider was blocked
//	arbiter_llm_tokens_total{tenant,model,type}          counter: tokens; type is input, cached_input (the part of
//	                                                     input served from the provider's prompt cache) or output
//	arbiter_llm_cost_usd_total{tenant,model}             counter: estimated cost of model calls, in US dollars
//	arbiter_tool_executions_total{tool,status}           counter: tool executions (including results reused from an
//	                                                     earlier attempt's record); status ok, not_found, ambiguous,
//	                                                     error or outcome_unknown
//	arbiter_tool_duration_seconds{tool}                  histogram: tool execution duration
//	arbiter_vetoes_total{guard,reason}                   counter: proposals refused by a guard
//	arbiter_confirmations_total{outcome}                 counter: pending confirmations by outcome: proposed, confirmed,
//	                                                     cancelled, expired, dropped, stale_button, refused
//	arbiter_inbox_duplicates_total{channel}              counter: redelivered messages answered from the inbox
//	arbiter_questions_total{answer}                      counter: questions tools asked users during turns (MCP
//	                                                     sampling and elicitation) by answer: accept, decline,
//	                                                     cancel, skip, answered, unanswered, no_channel
type Metrics struct {
	gatherer prometheus.Gatherer

	turns         *prometheus.CounterVec
	turnDuration  *prometheus.HistogramVec
	lockWait      prometheus.Histogram
	llmCalls      *prometheus.CounterVec
	llmDuration   *prometheus.HistogramVec
	retries       *prometheus.CounterVec
	fallbacks     *prometheus.CounterVec
	blocked       *prometheus.CounterVec
	tokens        *prometheus.CounterVec
	cost          *prometheus.CounterVec
	tools         *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	vetoes        *prometheus.CounterVec
	confirmations *prometheus.CounterVec
	duplicates    *prometheus.CounterVec
	questions     *prometheus.CounterVec

	tenant, route, status, provider, model, llmStatus, tool, toolStatus, guard, reason, channel *limiter
}

// NewMetrics creates the metrics and registers them with reg. A nil reg
// means a new registry of its own that also holds the Go runtime and
// process collectors. Registering twice with the same registry reuses the
// collectors already there, so two Metrics on one registry count into the
// same series. It panics if reg holds a different collector under one of
// these names.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		tenant:     newLimiter(maxTenants),
		route:      newLimiter(maxRoutes),
		status:     newLimiter(maxStatuses),
		provider:   newLimiter(maxProviders),
		model:      newLimiter(maxModels),
		llmStatus:  newLimiter(maxStatuses),
		tool:       newLimiter(maxTools),
		toolStatus: newLimiter(maxStatuses),
		guard:      newLimiter(maxGuards),
		reason:     newLimiter(maxReasons),
		channel:    newLimiter(maxChannels),
	}
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	} else {
		m.gatherer = prometheus.DefaultGatherer
	}

	m.turns = counterVec(reg, "arbiter_turns_total",
		"Finished turns by tenant, route and status.", "tenant", "route", "status")
	m.turnDuration = histogramVec(reg, "arbiter_turn_duration_seconds", turnBuckets,
		"Turn latency from arrival to reply, lock wait included, by route and status.", "route", "status")
	m.lockWait = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "arbiter_lock_wait_seconds",
		Help:    "Time a turn waited for its conversation's lock.",
		Buckets: lockBuckets,
	}))
	m.llmCalls = counterVec(reg, "arbiter_llm_calls_total",
		"Model calls by provider, model, status (ok or error kind) and attempt (first, retry, fallback, skipped).",
		"provider", "model", "status", "attempt")
	m.llmDuration = histogramVec(reg, "arbiter_llm_call_duration_seconds", llmBuckets,
		"Duration of model calls that were made (skipped attempts excluded).", "provider", "model")
	m.retries = counterVec(reg, "arbiter_llm_retries_total",
		"Model calls that retried the same model after a transient error.", "provider", "model")
	m.fallbacks = counterVec(reg, "arbiter_llm_fallbacks_total",
		"Model calls to the next model of a chain after a failure, by the model fallen back to.", "provider", "model")
	m.blocked = counterVec(reg, "arbiter_llm_blocked_total",
		"Model calls skipped because their provider was blocked.", "provider", "model")
	m.tokens = counterVec(reg, "arbiter_llm_tokens_total",
		"Tokens by tenant, model and type: input, cached_input (part of input served from the prompt cache), output.",
		"tenant", "model", "type")
	m.cost = counterVec(reg, "arbiter_llm_cost_usd_total",
		"Estimated cost of model calls in US dollars, by tenant and model.", "tenant", "model")
	m.tools = counterVec(reg, "arbiter_tool_executions_total",
		"Tool executions by tool and result status.", "tool", "status")
	m.toolDuration = histogramVec(reg, "arbiter_tool_duration_seconds", toolBuckets,
		"Tool execution duration by tool.", "tool")
	m.vetoes = counterVec(reg, "arbiter_vetoes_total",
		"Proposals refused by a guard, by guard and reason.", "guard", "reason")
	m.confirmations = counterVec(reg, "arbiter_confirmations_total",
		"Pending confirmations by outcome: proposed, confirmed, cancelled, expired, dropped, stale_button, refused.", "outcome")
	m.duplicates = counterVec(reg, "arbiter_inbox_duplicates_total",
		"Redelivered messages answered from the inbox without running again, by channel.", "channel")
	m.questions = counterVec(reg, "arbiter_questions_total",
		"Questions tools asked users during turns (MCP sampling and elicitation), by answer.", "answer")

	for _, o := range turn.Outcomes {
		m.confirmations.WithLabelValues(string(o))
	}
	for _, o := range questionOutcomes {
		m.questions.WithLabelValues(o)
	}
	return m
}

// counterVec registers a counter vector under name with the given labels.
func counterVec(reg prometheus.Registerer, name, help string, labels ...string) *prometheus.CounterVec {
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

// histogramVec registers a histogram vector under name with the given
// buckets and labels.
func histogramVec(reg prometheus.Registerer, name string, buckets []float64, help string, labels ...string) *prometheus.HistogramVec {
	return register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}

// register registers c with reg, or returns the equal collector reg
// already holds.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// Handler serves the registry the metrics were registered with in the
// Prometheus text or protobuf exposition format (for /metrics). When that
// registry cannot be read back (a Registerer that is not a Gatherer), it
// serves the default gatherer.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})
	}
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Observe counts one finished turn. It reads t and neither keeps nor
// modifies it. It has the signature of turn.Config.Observe.
func (m *Metrics) Observe(t *turn.Trace) {
	if m == nil || t == nil {
		return
	}
	tenant := m.tenant.value(t.Tenant)
	route := m.route.value(string(t.Route))
	status := m.status.value(string(t.Status))

	m.turns.WithLabelValues(tenant, route, status).Inc()
	m.turnDuration.WithLabelValues(route, status).Observe(seconds(t.DurationMS))
	m.lockWait.Observe(seconds(t.LockWaitMS))
	if t.Route == turn.RouteDuplicate {
		m.duplicates.WithLabelValues(m.channel.value(t.Channel)).Inc()
	}

	for i := range t.LLMCalls {
		m.observeCall(tenant, &t.LLMCalls[i])
	}
	for i := range t.Executed {
		ex := &t.Executed[i]
		name := m.tool.value(ex.Tool)
		m.tools.WithLabelValues(name, m.toolStatus.value(ex.Status)).Inc()
		m.toolDuration.WithLabelValues(name).Observe(seconds(ex.DurationMS))
	}
	for _, v := range t.Vetoes {
		m.vetoes.WithLabelValues(m.guard.value(v.Guard), m.reason.value(v.Reason)).Inc()
	}
	if c := t.Confirmation; c != nil {
		m.confirmations.WithLabelValues(oneOf(c.Outcome, turn.Outcomes...)).Inc()
	}
	for _, q := range t.Questions {
		m.questions.WithLabelValues(questionOutcome(q)).Inc()
	}
}

func questionOutcome(q turn.QuestionTrace) string {
	switch {
	case q.Error == chat.ErrNoLive.Error():
		return "no_channel"
	case q.Error != "":
		return "unanswered"
	}
	switch q.Choice {
	case "accept", "decline", "cancel", "skip":
		return q.Choice
	}
	return "answered" // typed text or a pressed value
}

func (m *Metrics) observeCall(tenant string, c *store.LLMCall) {
	provider, model := m.provider.value(c.Provider), m.model.value(c.Model)
	attempt := c.Attempt
	if attempt == "" {
		attempt = llm.AttemptFirst
	}
	attempt = oneOf(attempt, llm.AttemptFirst, llm.AttemptRetry, llm.AttemptFallback, llm.AttemptSkipped)
	m.llmCalls.WithLabelValues(provider, model, m.llmStatus.value(c.Status), attempt).Inc()
	switch attempt {
	case llm.AttemptRetry:
		m.retries.WithLabelValues(provider, model).Inc()
	case llm.AttemptFallback:
		m.fallbacks.WithLabelValues(provider, model).Inc()
	case llm.AttemptSkipped:
		m.blocked.WithLabelValues(provider, model).Inc()
	}
	if attempt != llm.AttemptSkipped {
		m.llmDuration.WithLabelValues(provider, model).Observe(seconds(c.DurationMS))
	}
	addPositive(m.tokens.WithLabelValues, float64(c.InputTokens), tenant, model, "input")
	addPositive(m.tokens.WithLabelValues, float64(c.CachedInputTokens), tenant, model, "cached_input")
	addPositive(m.tokens.WithLabelValues, float64(c.OutputTokens), tenant, model, "output")
	addPositive(m.cost.WithLabelValues, c.CostUSD, tenant, model)
}

// addPositive adds v to a counter only when v is positive: counters never
// go down, and series with nothing to count are not created.
func addPositive(series func(...string) prometheus.Counter, v float64, labels ...string) {
	if v > 0 {
		series(labels...).Add(v)
	}
}

// seconds converts a duration in milliseconds; negative is zero.
func seconds(ms int64) float64 {
	if ms < 0 {
		return 0
	}
	return float64(ms) / 1000
}
