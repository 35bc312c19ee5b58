// Package leancore holds the test that keeps the engine's module lean: a
// program importing only the engine and the built-in server must not pull
// OpenTelemetry, gRPC, Google APIs, Redis, PostgreSQL, the MCP SDK, the
// Anthropic SDK or a browser driver into its module graph. Those live in
// modules of their own (see go.work).
package leancore
