// Package config reads and validates arbiter's YAML configuration (plus the
// environment variables it names) into plain structs. Every error carries
// the line of the offending value. It builds nothing: turning a Config into
// stores, providers and channels is package server's job.
package config

import (
	"fmt"
	"strings"
)

// Config is the whole configuration file.
type Config struct {
	Listen string `yaml:"listen"`
	// PublicURL is how users reach this server (card links); default
	// "http://" + Listen.
	PublicURL string `yaml:"public_url"`
	// LinkHosts are hosts, besides public_url's and the integrations', that
	// replies may link to with parameters; links elsewhere lose their query
	// and images from elsewhere are removed.
	LinkHosts []string `yaml:"link_hosts"`
	Store     Store    `yaml:"store"`
	Journal   Journal  `yaml:"journal"`
	Models    []Model  `yaml:"models"`
	// Strategies name chains of models (by model name); "balanced" is the
	// models list in order unless given here.
	Strategies map[string][]string `yaml:"strategies"`
	// Strategy is the default strategy; default "balanced".
	Strategy     string           `yaml:"strategy"`
	Retry        Retry            `yaml:"retry"`
	Prices       map[string]Price `yaml:"prices"`
	Memory       Memory           `yaml:"memory"`
	Lifetimes    Lifetimes        `yaml:"lifetimes"`
	Retention    Retention        `yaml:"retention"`
	Confirmation Confirmation     `yaml:"confirmation"`
	Limits       Limits           `yaml:"limits"`
	Tenants      []Tenant         `yaml:"tenants"`
	// Assistants are named assistant profiles; a tenant picks one with
	// its assistant field.
	Assistants    map[string]Assistant `yaml:"assistants"`
	Tools         Tools                `yaml:"tools"`
	Commands      map[string]Command   `yaml:"commands"`
	Log           Log                  `yaml:"log"`
	Observability Observability        `yaml:"observability"`
	Redaction     Redaction            `yaml:"redaction"`
	Channels      Channels             `yaml:"channels"`

	// UnconfirmableOutcomes are outcomes (intent's names, or a tool's
	// own) that no tool of this deployment confirms: a reply asserting
	// one always goes to a person («доступ восстановлен» where no tool
	// restores access).
	UnconfirmableOutcomes []string `yaml:"unconfirmable_outcomes"`

	// lines maps a value's path ("tenants[0].users[1].role") to its line
	// in the file it was parsed from.
	lines map[string]int
	// Dir is the directory of the file the configuration was loaded from
	// (empty for one parsed from elsewhere): files it names, such as an
	// assistant's prompt_file, are relative to it.
	Dir string `yaml:"-"`
}

// Problem formats a problem of the value at path the way Parse reports
// them: "line N: path: message", with the line of the value or of its
// nearest enclosing value in the parsed file (none for a Config built in
// code).
func (c *Config) Problem(path, format string, args ...any) string {
	p := path
	line, ok := c.lines[p]
	for !ok && p != "" {
		if i := strings.LastIndexAny(p, ".["); i >= 0 {
			p = p[:i]
		} else {
			p = ""
		}
		line, ok = c.lines[p]
	}
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		return fmt.Sprintf("line %d: %s: %s", line, path, msg)
	}
	return fmt.Sprintf("%s: %s", path, msg)
}
