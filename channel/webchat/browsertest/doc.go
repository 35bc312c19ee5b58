// Package browsertest drives the web chat in headless Chromium (Debian's
// chromium, never a downloaded browser) against a fake of the HTTP API. It
// is a module of its own so that the browser driver stays out of the
// engine's module graph; it holds tests only.
package browsertest
