package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Errors collects every problem of a configuration, each with its line.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) { return LoadEnv(path, os.Getenv) }

// LoadEnv is Load with the environment that ${NAME} references and *_env
// names read from given by getenv.
func LoadEnv(path string, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return parse(f, getenv, filepath.Dir(path))
}

// Parse reads and validates a configuration. getenv resolves *_env names;
// files it names are relative to the working directory.
func Parse(r io.Reader, getenv func(string) string) (*Config, error) {
	return parse(r, getenv, "")
}

// Read reads a configuration file and validates it as far as it decodes,
// for a check that reports every mistake in one run: cfg is what decoded
// (a value at fault left out, so that the rest is checked too) and
// problems are all the mistakes found, each with its line. err is set, and
// cfg nil, only when the file cannot be read or is not YAML at all.
func Read(path string, getenv func(string) string) (cfg *Config, problems Errors, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return read(f, getenv, filepath.Dir(path))
}

func parse(r io.Reader, getenv func(string) string, dir string) (*Config, error) {
	cfg, problems, err := read(r, getenv, dir)
	switch {
	case err != nil:
		return nil, err
	case len(problems) > 0:
		return nil, problems
	}
	return cfg, nil
}

func read(r io.Reader, getenv func(string) string, dir string) (*Config, Errors, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read config: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, Errors{cleanYAMLError(err)}
	}
	cfg := &Config{Dir: dir}
	lines := map[string]int{}
	var shape []shapeProblem
	if len(root.Content) > 0 {
		doc := root.Content[0]
		indexLines(doc, "", lines)
		// Every mistake of shape is reported, and taken out so that the
		// rest decodes and is validated too.
		checkShape(doc, reflect.TypeOf(cfg).Elem(), "", &shape)
		if err := doc.Decode(cfg); err != nil {
			shape = append(shape, shapeProblem{0, cleanYAMLError(err)})
		}
	}
	cfg.lines = lines
	v := &validator{cfg: cfg, getenv: getenv}
	v.validate(cfg)
	if len(shape)+len(v.errs) > 0 {
		return cfg, mergeProblems(shape, v.errs), nil
	}
	return cfg, nil, nil
}

// Merge is problems in the order of their lines (those without one
// first).
func Merge(problems ...Errors) Errors {
	var all Errors
	for _, p := range problems {
		all = append(all, p...)
	}
	return mergeProblems(nil, all)
}

// mergeProblems lists the problems of shape and of meaning together, by
// line.
func mergeProblems(shape []shapeProblem, semantic Errors) Errors {
	all := append([]shapeProblem(nil), shape...)
	for _, e := range semantic {
		line := 0
		fmt.Sscanf(e, "line %d:", &line)
		all = append(all, shapeProblem{line, e})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
	out := make(Errors, len(all))
	for i, p := range all {
		out[i] = p.text
	}
	return out
}

func cleanYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	return strings.ReplaceAll(msg, "\n  ", "\n")
}

// indexLines maps a path such as "tenants[0].users[1].role" to the line
// of its value.
func indexLines(n *yaml.Node, path string, out map[string]int) {
	out[path] = n.Line
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			child := key
			if path != "" {
				child = path + "." + key
			}
			out[child] = n.Content[i].Line
			indexLines(n.Content[i+1], child, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			indexLines(c, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}
