package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// printVersion writes what the binary was built from, as the Go toolchain
// recorded it: the module's version ("(devel)" when built from a checkout,
// the tag for `go install …@vX.Y.Z`), the commit with its time and whether
// the tree had changes, and the Go version and platform.
func printVersion(w io.Writer) {
	info, _ := debug.ReadBuildInfo()
	io.WriteString(w, versionText(info))
}

// versionText renders info (nil when the binary carries none).
func versionText(info *debug.BuildInfo) string {
	module, version, goVersion := "github.com/arbiterhq/arbiter/cmd", "unknown", runtime.Version()
	settings := map[string]string{}
	if info != nil {
		if info.Main.Path != "" {
			module = info.Main.Path
		}
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
	}
	commit := settings["vcs.revision"]
	switch {
	case commit == "":
		commit = "unknown (built without version control information: go run, or -buildvcs=false)"
	case settings["vcs.modified"] == "true":
		commit += " (modified: the tree had uncommitted changes)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "arbiter %s\n", version)
	fmt.Fprintf(&b, "module:  %s\n", module)
	fmt.Fprintf(&b, "commit:  %s\n", commit)
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(&b, "time:    %s\n", t)
	}
	fmt.Fprintf(&b, "go:      %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
