package trello

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// Reconciliation markers. Trello takes no idempotency key, so a card
// created (or a comment written) under a key ends with a marker block:
//
//	<text>
//
//	—
//	arbiter:<key>
//
// Before writing, create_task looks for an open card of the board whose
// description ends with the block of the call's key, and comment_task for
// such a comment among the card's latest comments; when one is there, the
// write already happened and its object is returned instead of writing
// again. The block is stripped from descriptions and comments the tools
// show, and update_task keeps it when it replaces a description.
//
// What this does not cover: a marked card archived, moved to another board
// or whose marker was edited away before the repeat is not found, so the
// repeat creates a new card; a marked comment beyond the first page of
// the card's actions (Trello's default page holds 50) is not found either.
// Repeats come within minutes of the first try, which makes these cases
// remote.

// markerPrefix starts the marker line.
const markerPrefix = "arbiter:"

// markerPattern finds a trailing marker block; group 1 is the text before
// it, group 2 the key token.
var markerPattern = regexp.MustCompile(`(?s)^(.*?)\s*(?:^|\n)[ \t]*—[ \t]*\r?\n[ \t]*arbiter:(\S+)\s*$`)

var safeKeyPattern = regexp.MustCompile(`^[A-Za-z0-9:._\-]{1,128}$`)

// markerToken is the key as the marker carries it: the key itself when it
// is short and plain, else a digest of it.
func markerToken(key string) string {
	if safeKeyPattern.MatchString(key) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "sha256-" + hex.EncodeToString(sum[:16])
}

// withMarker appends the marker block of key to text; an empty key adds
// nothing.
func withMarker(text, key string) string {
	if key == "" {
		return text
	}
	line := "—\n" + markerPrefix + markerToken(key)
	if strings.TrimSpace(text) == "" {
		return line
	}
	return strings.TrimRight(text, " \t\r\n") + "\n\n" + line
}

// hasMarker reports whether text ends with the marker block of key.
func hasMarker(text, key string) bool {
	if key == "" {
		return false
	}
	m := markerPattern.FindStringSubmatch(text)
	return m != nil && m[2] == markerToken(key)
}

// stripMarker returns text without a trailing marker block.
func stripMarker(text string) string {
	if m := markerPattern.FindStringSubmatch(text); m != nil {
		return strings.TrimRight(m[1], " \t\r\n")
	}
	return text
}

// markerBlock returns the trailing marker block of text with the blank
// line before it, or "".
func markerBlock(text string) string {
	m := markerPattern.FindStringSubmatchIndex(text)
	if m == nil {
		return ""
	}
	return "\n\n—\n" + markerPrefix + text[m[4]:m[5]]
}
