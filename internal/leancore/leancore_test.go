package leancore

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// forbidden are module path prefixes an engine-only program must not get.
var forbidden = []string{
	"go.opentelemetry.io/", "google.golang.org/grpc", "google.golang.org/api", "cloud.google.com/",
	"github.com/redis/", "github.com/jackc/", "github.com/modelcontextprotocol/", "github.com/anthropics/",
	"github.com/chromedp/",
}

// TestEngineModuleGraphIsLean builds a throwaway module that imports the
// engine packages (and the server with its built-in kinds) from this
// checkout and lists its module graph.
func TestEngineModuleGraphIsLean(t *testing.T) {
	if testing.Short() {
		t.Skip("resolves a module graph")
	}
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/embedder\n\ngo 1.26.0\n\nrequire github.com/arbiterhq/arbiter v0.0.0-00010101000000-000000000000\n\nreplace github.com/arbiterhq/arbiter => "+root+"\n")
	write("main.go", `package main

import (
	_ "github.com/arbiterhq/arbiter/chat"
	_ "github.com/arbiterhq/arbiter/llm"
	_ "github.com/arbiterhq/arbiter/llm/openaicompat"
	_ "github.com/arbiterhq/arbiter/server"
	_ "github.com/arbiterhq/arbiter/store"
	_ "github.com/arbiterhq/arbiter/store/sqlitestore"
	_ "github.com/arbiterhq/arbiter/tool"
	_ "github.com/arbiterhq/arbiter/tool/taskboard"
	_ "github.com/arbiterhq/arbiter/turn"
)

func main() {}
`)
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	goCmd("build", "-o", os.DevNull, ".")
	all := goCmd("list", "-m", "all")
	var bad []string
	for _, line := range strings.Split(all, "\n") {
		for _, prefix := range forbidden {
			if strings.HasPrefix(line, prefix) {
				bad = append(bad, line)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("the engine's module graph holds %d heavy modules:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	t.Logf("%d modules in an engine-only program's graph", strings.Count(strings.TrimSpace(all), "\n")+1)
}
