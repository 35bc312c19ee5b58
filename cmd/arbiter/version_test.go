package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOfTheBuiltBinary builds `arbiter` as a user does in a clone
// (go build) and asks it what it is: the commit it was built from, whether
// the tree had changes, and the Go version that built it.
func TestVersionOfTheBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	gitDir, err := exec.Command("git", "rev-parse", "--git-dir").Output()
	if err != nil {
		t.Skip("not a git checkout: ", err)
	}
	if fi, err := os.Stat(filepath.Join("..", "..", ".git")); err == nil && !fi.IsDir() {
		// Go records version control information only where .git is a
		// directory, not in a worktree (.git a file pointing at another).
		t.Skipf("a git worktree (%s): the Go toolchain stamps no commit here; a clone has it", strings.TrimSpace(string(gitDir)))
	}
	head, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	bin := filepath.Join(t.TempDir(), "arbiter")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// What the toolchain counts as changes: any line of git status.
	status, _ := exec.Command("git", "status", "--porcelain").Output()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("arbiter version: %v\n%s", err, out)
	}
	text := string(out)
	commit := regexp.MustCompile(`(?m)^commit:  ([0-9a-f]{40})`).FindStringSubmatch(text)
	if commit == nil || commit[1] != strings.TrimSpace(string(head)) {
		t.Errorf("commit is not HEAD (%s):\n%s", head, text)
	}
	if dirty := len(bytes.TrimSpace(status)) > 0; dirty != strings.Contains(text, "(modified") {
		t.Errorf("modified should be %v:\n%s", dirty, text)
	}
	if !strings.Contains(text, "go:      "+runtime.Version()+" ") {
		t.Errorf("go version is not %s:\n%s", runtime.Version(), text)
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "arbiter ") || !strings.Contains(out.String(), "go:      go") {
		t.Errorf("version output:\n%s", out.String())
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/arbiterhq/arbiter/cmd", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}}}
	got := versionText(info)
	for _, want := range []string{"arbiter v0.3.0\n", "commit:  0123456789abcdef0123456789abcdef01234567 (modified", "time:    2026-12-01T10:00:00Z\n", "go:      go1.26.8 "} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if got := versionText(nil); !strings.Contains(got, "commit:  unknown") {
		t.Errorf("without build info:\n%s", got)
	}
}
