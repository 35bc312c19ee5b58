// Package gen builds canonical's rune table from Unicode's confusables
// data (UTS #39, confusables.txt, shipped gzipped next to this file) and
// the normalization and case tables of golang.org/x/text and the standard
// library. canonical's test builds it again and compares, so a table that
// no longer follows from its sources fails there.
package gen

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"go/format"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Confusables is Unicode's confusables.txt, version 17.0.0 of
// 2025-07-22 (the UTS #39 security data, published under
// https://www.unicode.org/Public/17.0.0/security/), unchanged and with
// its copyright notice, gzipped (gzip -9 -n). Unicode's terms of use
// (https://www.unicode.org/terms_of_use.html) allow it to be copied with
// that notice. To move to a newer version: put its file here the same
// way, set ConfusablesSHA256 to the SHA-256 of the uncompressed file, and
// run go generate ./canonical.
//
//go:embed confusables.txt.gz
var Confusables []byte

// ConfusablesSHA256 is the SHA-256 of the uncompressed file.
const ConfusablesSHA256 = "ec88ecebcf89f63f813d460842b0cf8322744b40a0b2c06f88a2cea48c0351ea"

// Source renders table.go: every rune of NFKC text whose canonical form
// differs from itself, with that form.
func Source() ([]byte, error) {
	data, header, err := parse(Confusables)
	if err != nil {
		return nil, err
	}
	var keys []rune
	var vals []string
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		if !norm.NFKC.IsNormalString(string(r)) {
			continue // canonical.Append normalizes first: the rune never reaches the table
		}
		if f := form(data, r); f != string(r) {
			keys = append(keys, r)
			vals = append(vals, f)
		}
	}
	return render(header, keys, vals)
}

// parse reads confusables.txt: source code point ; target code points.
func parse(gz []byte) (map[rune]string, []string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(raw)
	if hex.EncodeToString(sum[:]) != ConfusablesSHA256 {
		return nil, nil, fmt.Errorf("confusables.txt: SHA-256 %x, want %s", sum, ConfusablesSHA256)
	}
	data := map[rune]string{}
	var header []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "\ufeff")
		if strings.HasPrefix(line, "#") && len(data) == 0 && strings.TrimSpace(line) != "#" {
			header = append(header, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Split(line, ";")
		if len(fields) < 3 {
			continue
		}
		src, err := strconv.ParseUint(strings.TrimSpace(fields[0]), 16, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("confusables.txt: %q: %w", line, err)
		}
		var target strings.Builder
		for _, cp := range strings.Fields(fields[1]) {
			v, err := strconv.ParseUint(cp, 16, 32)
			if err != nil {
				return nil, nil, fmt.Errorf("confusables.txt: %q: %w", line, err)
			}
			target.WriteRune(rune(v))
		}
		data[rune(src)] = target.String()
	}
	return data, header, sc.Err()
}

// form is the canonical form of one rune: lower case, decomposed with its
// marks dropped, each letter (or digit) mapped to its confusables
// prototype — the Latin one where the rune's lower or upper case has one,
// so that Cyrillic «В», «в» and Latin "B", "b" all read "b" — and the
// result mapped again until it no longer changes.
func form(data map[rune]string, r rune) string {
	s := strip(string(unicode.ToLower(r)))
	for range 4 {
		var b strings.Builder
		for _, q := range s {
			b.WriteString(proto(data, q))
		}
		if b.String() == s {
			break
		}
		s = b.String()
	}
	return s
}

// proto maps one rune of a word to its prototype. A rune that is not a
// letter, digit or mark maps only to ASCII letters or digits ("|" reads
// "l"): punctuation keeps its meaning for the checks that read it.
func proto(data map[rune]string, q rune) string {
	word := unicode.In(q, unicode.L, unicode.N, unicode.M)
	try := func(c rune) (string, bool) {
		t, ok := data[c]
		if !ok {
			t = string(c)
		}
		t = strip(strings.ToLower(t))
		if !word && !alnumASCII(t) {
			return string(q), false
		}
		return t, isASCII(t)
	}
	first, ok := try(q)
	if ok {
		return first
	}
	if up := unicode.ToUpper(q); up != q {
		if t, ok := try(up); ok {
			return t
		}
	}
	return first
}

// strip drops the combining marks of s (decomposed, then composed again:
// a Hangul syllable stays one).
func strip(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.In(r, unicode.Mn, unicode.Me) {
			b.WriteRune(r)
		}
	}
	return norm.NFC.String(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func alnumASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// render writes the table as Go: sorted keys, and each key's form as a
// slice of one string (offset and length packed in a uint32).
func render(header []string, keys []rune, vals []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go generate (internal/gen); DO NOT EDIT.\n\n")
	b.WriteString("package canonical\n\n")
	b.WriteString("// The canonical form of each rune that is not its own, built from\n")
	fmt.Fprintf(&b, "// confusables.txt (SHA-256 %s), whose header reads:\n//\n", ConfusablesSHA256)
	for _, h := range header {
		b.WriteString("//\t" + h + "\n")
	}
	fmt.Fprintf(&b, "//\n// with the normalization tables of golang.org/x/text (Unicode %s) and\n", norm.Version)
	fmt.Fprintf(&b, "// the case tables of the standard library (Unicode %s).\n\n", unicode.Version)
	var blob strings.Builder
	offsets := map[string]int{}
	b.WriteString("var tableKeys = [...]int32{")
	for i, k := range keys {
		if i%12 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "0x%04x, ", k)
	}
	b.WriteString("\n}\n\n// tableVals: offset << 8 | length in tableData.\nvar tableVals = [...]uint32{")
	for i, v := range vals {
		off, ok := offsets[v]
		if !ok {
			off = blob.Len()
			if j := strings.Index(blob.String(), v); j >= 0 {
				off = j
			} else {
				blob.WriteString(v)
			}
			offsets[v] = off
		}
		if len(v) > 255 {
			return nil, fmt.Errorf("form of %U is %d bytes long", keys[i], len(v))
		}
		if i%8 == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "0x%08x, ", uint32(off)<<8|uint32(len(v)))
	}
	b.WriteString("\n}\n\nconst tableData = ")
	data := blob.String()
	for len(data) > 0 {
		n := min(len(data), 64)
		for !utf8.ValidString(data[:n]) {
			n--
		}
		b.WriteString(strconv.Quote(data[:n]))
		data = data[n:]
		if len(data) > 0 {
			b.WriteString(" +\n\t")
		}
	}
	b.WriteString("\n")
	return format.Source(b.Bytes())
}
