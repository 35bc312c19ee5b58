package knowledge

import (
	"strings"
	"testing"
)

func TestStem(t *testing.T) {
	t.Parallel()
	for w, want := range map[string]string{
		"встреча": "встреч", "встречи": "встреч", "встречу": "встреч", "встречей": "встреч", "встречами": "встреч",
		"компания": "компан", "компании": "компан", "компаниями": "компан", "новой": "нов", "нового": "нов",
		"статья": "стат", "статьи": "стат", "дом": "дом", "дома": "дом", "клиент": "клиент", "клиентом": "клиент",
		"meetings": "meeting", "meeting": "meet", "companies": "compan", "boxes": "box", "matches": "match",
		"notes": "note", "class": "class", "status": "status", "planned": "plann", "need": "need", "use": "use", "company": "compan", "day": "day", "play": "play",
		"2026": "2026", "ии": "ии",
	} {
		if got := stem(w); got != want {
			t.Errorf("stem(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestQueryWords(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]string{
		`Встреча с "клиентом" NEAR(ёлка)*`: "встреча клиентом near елка",
		`с и в`:   "с и в",
		`a-b c:d`: "a b c d",
		`title:Встреча -встреча ВСТРЕЧА`: "title встреча",
		`***`:        "",
		`café naïve`: "café naïve",
		"cafe\u0301": "café",
	} {
		if got := strings.Join(queryWords(q), " "); got != want {
			t.Errorf("queryWords(%q) = %q, want %q", q, got, want)
		}
	}
	if n := len(queryWords(strings.Repeat("слово", 1) + strings.Repeat(" а1 б2 в3 г4 д5 е6 ж7 з8 и9 к0 л1 м2 н3", 2))); n != maxTerms {
		t.Errorf("%d words, want %d", n, maxTerms)
	}
}

func TestMatchExpr(t *testing.T) {
	t.Parallel()
	got := matchExpr(queryWords(`Встречу "с" ИИ (NEAR*`), "AND")
	if want := `"встреч"* AND "ии" AND "near"*`; got != want {
		t.Errorf("matchExpr = %s, want %s", got, want)
	}
}

func TestRestoreSnippet(t *testing.T) {
	t.Parallel()
	body := "Ещё раз: ёлку ставим в холле."
	raw := markEllipsis + "раз: " + markOpen + "елку" + markClose + " ставим" + markEllipsis
	if got, want := restoreSnippet(raw, body), "…раз: **ёлку** ставим…"; got != want {
		t.Errorf("restoreSnippet = %q, want %q", got, want)
	}
	if got, want := restoreSnippet(markOpen+"Еще"+markClose+" раз: елку ставим в холле.", body), "**Ещё** раз: ёлку ставим в холле."; got != want {
		t.Errorf("restoreSnippet = %q, want %q", got, want)
	}
	if got := restoreSnippet("", ""); got != "" {
		t.Errorf("empty snippet = %q", got)
	}
}
