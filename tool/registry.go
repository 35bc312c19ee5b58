package tool

import (
	"fmt"
	"regexp"
	"sort"
)

var namePattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$`)

// ValidName reports whether name can name a tool: a letter, then letters,
// digits, '_', '.' or '-', at most 64 in all (what model APIs accept).
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Entry is a registered tool with its normalized spec and compiled schema.
type Entry struct {
	Tool   Tool
	Spec   Spec
	Schema *Schema
}

// Registry maps tool names to tools. It is built once at start and
// read-only afterwards, so it is safe for concurrent use.
type Registry struct {
	entries map[string]*Entry
	names   []string
}

// NewRegistry validates every tool's spec, compiles its input schema once,
// fills in default limits and rejects duplicate names.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{entries: make(map[string]*Entry, len(tools))}
	for _, t := range tools {
		if err := r.add(t); err != nil {
			return nil, err
		}
	}
	sort.Strings(r.names)
	return r, nil
}

func (r *Registry) add(t Tool) error {
	spec := t.Spec()
	if !namePattern.MatchString(spec.Name) {
		return fmt.Errorf("tool name %q: must start with a letter and hold only letters, digits, '_', '.', '-' (at most 64)", spec.Name)
	}
	if _, dup := r.entries[spec.Name]; dup {
		return fmt.Errorf("tool %s registered twice", spec.Name)
	}
	if !spec.Risk.Valid() {
		return fmt.Errorf("tool %s: unknown risk %q (want read, write:safe or write:full)", spec.Name, spec.Risk)
	}
	switch spec.Confirm {
	case "":
		spec.Confirm = ConfirmNever
	case ConfirmNever, ConfirmAlways:
	default:
		return fmt.Errorf("tool %s: unknown confirm policy %q (want never or always)", spec.Name, spec.Confirm)
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.MaxResultBytes <= 0 {
		spec.MaxResultBytes = DefaultMaxResultBytes
	}
	if spec.Title == "" {
		spec.Title = spec.Name
	}
	if len(spec.InputSchema) == 0 {
		spec.InputSchema = []byte(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	schema, err := CompileSchema(spec.Name, spec.InputSchema)
	if err != nil {
		return err
	}
	r.entries[spec.Name] = &Entry{Tool: t, Spec: spec, Schema: schema}
	r.names = append(r.names, spec.Name)
	return nil
}

// Lookup returns the entry for an exact name.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	e, ok := r.entries[name]
	return e, ok
}

// Names returns every registered name, sorted.
func (r *Registry) Names() []string { return r.names }

// SetChip sets the text a person reads while a call of a registered tool
// runs (Spec.Chip), as configuration words it; call it only while wiring.
func (r *Registry) SetChip(name string, chip Localized) error {
	e, ok := r.entries[name]
	if !ok {
		return fmt.Errorf("tool %s is not registered", name)
	}
	e.Spec.Chip = chip
	return nil
}

// Override changes the risk and confirmation policy of a registered tool
// (empty values keep the tool's own). It is how configuration makes a tool
// stricter; call it only while wiring, before the registry is shared.
func (r *Registry) Override(name string, risk Risk, confirm Confirm) error {
	e, ok := r.entries[name]
	if !ok {
		return fmt.Errorf("tool %s is not registered", name)
	}
	if risk != "" {
		if !risk.Valid() {
			return fmt.Errorf("tool %s: unknown risk %q", name, risk)
		}
		e.Spec.Risk = risk
	}
	if confirm != "" {
		if confirm != ConfirmNever && confirm != ConfirmAlways {
			return fmt.Errorf("tool %s: unknown confirm policy %q", name, confirm)
		}
		e.Spec.Confirm = confirm
	}
	return nil
}
