package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name of the spans when neither
// Config.ServiceName nor OTEL_SERVICE_NAME sets one.
const DefaultServiceName = "arbiter"

// scopeName is the instrumentation scope of the spans.
const scopeName = "github.com/arbiterhq/arbiter/observe"

// Exporter names accepted by Config.Exporter and OTEL_TRACES_EXPORTER.
const (
	ExporterOTLP   = "otlp"
	ExporterStdout = "stdout" // "console" is accepted as a synonym
	ExporterNone   = "none"
)

// OTLP protocols accepted by OTEL_EXPORTER_OTLP_TRACES_PROTOCOL and
// OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	protocolHTTP = "http/protobuf"
	protocolGRPC = "grpc"
)

// Config configures NewTracing. The zero value exports nothing unless the
// environment asks for it.
type Config struct {
	// ServiceName is the resource's service.name; empty means
	// DefaultServiceName. OTEL_SERVICE_NAME, and a service.name in
	// OTEL_RESOURCE_ATTRIBUTES, take precedence over it.
	ServiceName string
	// Exporter is "otlp", "stdout" (or "console"), "none", or a
	// comma-separated list of them. Empty means OTEL_TRACES_EXPORTER; when
	// that is unset too, "otlp" if an OTLP endpoint is configured
	// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
	// otherwise "none" — unlike the SDK's default, no spans are sent to a
	// local collector nobody configured.
	Exporter string
	// CaptureContent records the content of a turn on its span: the
	// decision JSON and the reply text as events, tool names the model
	// made up in vetoes, and error messages as status descriptions. Off by
	// default: that content is personal data. With it off, errors are
	// recorded by their class (the turn's status, the model call's error
	// kind, the tool's status) and the journal, found by arbiter.turn.id,
	// holds the text.
	CaptureContent bool
	// PlainConversationID records the conversation id as it is. By default
	// gen_ai.conversation.id is a pseudonym: the first 16 hex digits of
	// SHA-256 over the tenant and the conversation id, which groups a
	// conversation's turns without showing the chat id. It is not
	// anonymization: a guessable chat id can be found by hashing guesses.
	PlainConversationID bool
	// Writer receives the stdout exporter's output; nil means os.Stdout.
	Writer io.Writer
	// TracerProvider, when set, is used as it is: Exporter, ServiceName,
	// Writer and the OTEL_* variables are ignored, and the returned
	// shutdown does nothing (the provider's owner shuts it down).
	TracerProvider trace.TracerProvider
}

// Tracing turns finished turns into OpenTelemetry spans. Create it with
// NewTracing; pass its Observe method (alone or through Observer) as
// turn.Config.Observe. It is safe for concurrent use; a nil *Tracing, and
// one whose exporter is "none", observe nothing.
type Tracing struct {
	tracer   trace.Tracer
	provider trace.TracerProvider
	capture  bool
	plainID  bool
}

// NewTracing sets up a tracer provider from cfg and the standard OTEL_*
// environment variables and returns a Tracing that writes to it, and the
// function that flushes and stops it (call it once, on shutdown, with a
// deadline). It does not install the provider globally; see
// TracerProvider.
//
// Honoured variables: OTEL_SDK_DISABLED (true: no spans at all, whatever
// cfg says); OTEL_TRACES_EXPORTER (when cfg.Exporter is empty);
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; OTEL_EXPORTER_OTLP_PROTOCOL
// and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ("http/protobuf", the default, or
// "grpc"); and, read by the OpenTelemetry SDK and exporters themselves,
// OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION,
// _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY, _INSECURE (grpc),
// OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_* and
// OTEL_SPAN_*_LIMIT.
func NewTracing(ctx context.Context, cfg Config) (*Tracing, func(context.Context) error, error) {
	noShutdown := func(context.Context) error { return nil }
	if cfg.TracerProvider != nil {
		return newTracing(cfg.TracerProvider, cfg), noShutdown, nil
	}
	if envTrue("OTEL_SDK_DISABLED") {
		return &Tracing{}, noShutdown, nil
	}
	names, err := exporterNames(cfg.Exporter)
	if err != nil {
		return nil, nil, err
	}
	var exporters []sdktrace.SpanExporter
	stop := func() {
		for _, e := range exporters {
			_ = e.Shutdown(context.WithoutCancel(ctx))
		}
	}
	for _, name := range names {
		var e sdktrace.SpanExporter
		switch name {
		case ExporterOTLP:
			e, err = newOTLP(ctx)
		case ExporterStdout:
			w := cfg.Writer
			if w == nil {
				w = os.Stdout
			}
			e, err = stdouttrace.New(stdouttrace.WithWriter(w))
		}
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("tracing: %s exporter: %w", name, err)
		}
		exporters = append(exporters, e)
	}
	if len(exporters) == 0 {
		return &Tracing{}, noShutdown, nil
	}
	res, err := newResource(ctx, cfg.ServiceName)
	if err != nil {
		stop()
		return nil, nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return newTracing(tp, cfg), tp.Shutdown, nil
}

func newTracing(tp trace.TracerProvider, cfg Config) *Tracing {
	return &Tracing{
		tracer:   tp.Tracer(scopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		provider: tp,
		capture:  cfg.CaptureContent,
		plainID:  cfg.PlainConversationID,
	}
}

// Enabled reports whether the Tracing records spans.
func (tr *Tracing) Enabled() bool {
	return tr != nil && tr.tracer != nil
}

// TracerProvider returns the provider the spans go to, or nil when tracing
// is disabled. Install it with otel.SetTracerProvider to have other
// instrumented code in the process export through it too.
func (tr *Tracing) TracerProvider() trace.TracerProvider {
	if tr == nil {
		return nil
	}
	return tr.provider
}

// exporterNames resolves the exporter list from the configuration and the
// environment; "none" entries are dropped.
func exporterNames(configured string) ([]string, error) {
	list := configured
	if strings.TrimSpace(list) == "" {
		list = os.Getenv("OTEL_TRACES_EXPORTER")
	}
	if strings.TrimSpace(list) == "" {
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
		list = ExporterOTLP
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "console":
			n = ExporterStdout
		case ExporterOTLP, ExporterStdout:
		case ExporterNone, "":
			continue
		default:
			return nil, fmt.Errorf("tracing: unknown exporter %q (want otlp, stdout, console or none)", n)
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, nil
}

// newOTLP creates the OTLP exporter for the protocol the environment
// names. Endpoint, headers, TLS, compression and timeout come from the
// exporter's own reading of the environment.
func newOTLP(ctx context.Context) (sdktrace.SpanExporter, error) {
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.ToLower(strings.TrimSpace(protocol)) {
	case "", protocolHTTP:
		return otlptracehttp.New(ctx)
	case protocolGRPC:
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("unsupported OTLP protocol %q (want %s or %s)", protocol, protocolHTTP, protocolGRPC)
	}
}

// newResource describes this process: the SDK, the service name, and what
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME add (the later wins).
func newResource(ctx context.Context, serviceName string) (*resource.Resource, error) {
	if serviceName == "" {
		serviceName = DefaultServiceName
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// envTrue reports whether the variable is "true" (case-insensitive), as the
// OpenTelemetry specification reads boolean variables.
func envTrue(name string) bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv(name)), "true")
}
