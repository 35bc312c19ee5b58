package licence

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

// apache20 is the SHA-256 of the Apache License 2.0 as the Apache Software
// Foundation publishes it (the plain-text form with its leading blank line).
const apache20 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

func TestRootLicenceIsApache20Verbatim(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatalf("the repository has no LICENSE at its root: %v", err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != apache20 {
		t.Fatalf("LICENSE is not the Apache License 2.0 verbatim (sha256 %s)", got)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
}

// TestSourceFilesCarryNoHeaders keeps the policy the README states: the
// root LICENSE covers every file, so no source file carries a copyright or
// licence header that could say otherwise.
func TestSourceFilesCarryNoHeaders(t *testing.T) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "external":
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		if h := header(t, path); h != "" {
			t.Errorf("%s carries a licence header (%q); the root LICENSE covers it", path, h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// header returns the first comment line before the package clause that
// reads as a copyright or licence notice.
func header(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "package ") {
			return ""
		}
		l := strings.ToLower(line)
		if strings.HasPrefix(l, "//") && (strings.Contains(l, "copyright") || strings.Contains(l, "spdx-license-identifier") || strings.Contains(l, "licensed under")) {
			return line
		}
	}
	return ""
}

// TestThirdPartyDataKeepsItsLicences checks that every data set copied from
// elsewhere keeps its upstream LICENSE next to it, and that the index of
// testdata/external names it.
func TestThirdPartyDataKeepsItsLicences(t *testing.T) {
	dir := filepath.Join(root, "testdata", "external")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "LICENSE"))
		if err != nil || len(b) == 0 {
			t.Errorf("testdata/external/%s has no LICENSE of its own", e.Name())
		}
		if !strings.Contains(string(index), "`"+e.Name()+"/LICENSE`") {
			t.Errorf("testdata/external/README.md does not name %s/LICENSE", e.Name())
		}
	}
	if n == 0 {
		t.Fatal("testdata/external holds no data sets")
	}
}

// TestReadmeStatesThePolicy keeps the README's licence section: the licence,
// the header policy and where the third-party licences are.
func TestReadmeStatesThePolicy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Licence\n")
	if !ok {
		t.Fatal("README has no Licence section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	for _, want := range []string{"Apache License 2.0", "`LICENSE`", "headers", "testdata/external"} {
		if !strings.Contains(section, want) {
			t.Errorf("README's Licence section does not mention %q", want)
		}
	}
}
