// Package observe turns the traces of finished turns (turn.Trace) into
// Prometheus metrics (Metrics, served by Metrics.Handler) and OpenTelemetry
// spans (Tracing, configured from Config and the standard OTEL_*
// environment variables). Both work after the fact from the trace the
// engine hands to turn.Config.Observe; Observer combines them.
//
// It holds no state of the engine and changes nothing in it: it does not
// instrument HTTP servers or providers, start spans while a turn runs,
// install global OpenTelemetry providers, or keep traces. Metric labels
// are bounded and never carry turn, user, chat or message ids; spans
// carry no prompt or completion content unless Config.CaptureContent asks
// for it.
package observe

import "github.com/arbiterhq/arbiter/turn"

// Observer combines observers into one for turn.Config.Observe: it calls
// each non-nil one in order with the same trace. With none it returns a
// function that does nothing.
//
//	cfg.Observe = observe.Observer(metrics.Observe, tracing.Observe)
func Observer(obs ...func(*turn.Trace)) func(*turn.Trace) {
	var list []func(*turn.Trace)
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return func(*turn.Trace) {}
	case 1:
		return list[0]
	}
	return func(t *turn.Trace) {
		for _, o := range list {
			o(t)
		}
	}
}
