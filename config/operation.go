package config

import "strings"

// Observability configures metrics and traces.
type Observability struct {
	// Metrics serves Prometheus metrics at /metrics; default true.
	Metrics *bool `yaml:"metrics"`
	// Traces: exporter otlp, stdout or none; empty follows the OTEL_*
	// environment (OTLP when an endpoint is set).
	TracesExporter string `yaml:"traces_exporter"`
	// CaptureContent records decisions and replies on spans (off: PII).
	CaptureContent bool `yaml:"capture_content"`
}

// Command is a slash command routed to a tool without a model.
type Command struct {
	Tool string `yaml:"tool"`
	Args string `yaml:"args"`
}

// Redaction says where the key of the redacted fields' hashes comes from.
type Redaction struct {
	// KeyEnv names the environment variable holding the key (default
	// ARBITER_REDACTION_KEY). Unset or empty: a random key per process,
	// so a value's hashes match only within one run.
	KeyEnv string `yaml:"key_env"`
}

// Log configures logging.
type Log struct {
	Format string `yaml:"format"` // text (default) or json
	Level  string `yaml:"level"`  // debug, info (default), warn, error
}

// check checks the traces' exporter.
func (o Observability) check(v *validator) {
	switch o.TracesExporter {
	case "", "otlp", "stdout", "none":
	default:
		v.errorf("observability.traces_exporter", "unknown exporter %q (otlp, stdout or none)", o.TracesExporter)
	}
}

// checkCommands checks that each slash command is named as one and runs a
// tool.
func (v *validator) checkCommands(commands map[string]Command) {
	for name, cmd := range commands {
		if !strings.HasPrefix(name, "/") {
			v.errorf("commands."+name, "a command starts with /")
		}
		if cmd.Tool == "" {
			v.errorf("commands."+name, "tool is required")
		}
	}
}

// check checks the log's format.
func (l Log) check(v *validator) {
	if l.Format != "" && l.Format != "text" && l.Format != "json" {
		v.errorf("log.format", "unknown log format %q (text or json)", l.Format)
	}
}
