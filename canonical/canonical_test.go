package canonical

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/arbiterhq/arbiter/canonical/internal/gen"
)

// Disguised spellings have the form of the plain one; different words do
// not.
func TestDisguisesReadAsThePlainWords(t *testing.T) {
	for _, c := range []struct{ plain, disguised string }{
		{"Возврат выполнен", "Воз\u200bврат выполнен"},       // zero-width space
		{"Возврат выполнен", "Возврат вы\u2060полнен"},       // word joiner
		{"Возврат выполнен", "Возврат вы\u00adпол\u00adнен"}, // soft hyphens
		{"Возврат выполнен", "Возврат **выполнен**"},         // Markdown emphasis
		{"Возврат выполнен", "Возврат __вы__полнен"},         // emphasis inside a word
		{"Возврат выполнен", "Возврат <b>выполнен</b>"},      // an inline HTML tag
		{"Возврат выполнен", "Возврат <span style=\"x\">вы</span>полнен"},
		{"Возврат выполнен", "Возврат `выполнен`"},          // a code span
		{"Возврат выполнен", "Вoзврат выполнен"},            // a Latin o
		{"Возврат выполнен", "BOЗBPAT BЫПOЛHEH"},            // Latin capitals where they look alike
		{"Возврат выполнен", "Воз-врат выполнен"},           // a hyphen inside a word
		{"Возврат выполнен", "Воз-\nврат выполнен"},         // hyphenated across a line
		{"Возврат выполнен", "Возвра́т выполнен"},           // a stress mark
		{"Возврат выполнен", "&#1042;озврат выполнен"},      // a character reference
		{"Возврат выполнен", "Возврат\u00a0\u00a0выполнен"}, // no-break spaces
		{"Возврат выполнен", "Возврат\uFE0F выполнен"},      // a variation selector
		{"Возврат выполнен", "В о з в р а т выполнен"},      // spelled out
		{"Платеж возвращен", "Платёж возвращён"},            // ё
		{"refunded", "𝐫𝐞𝐟𝐮𝐧𝐝𝐞𝐝"},                            // mathematical bold (NFKC)
		{"refunded", "ｒｅｆｕｎｄｅｄ"},                            // full width
		{"refunded", "rеfundеd"},                            // Cyrillic е
		{"we've refunded", "we’ve refunded"},                // a typographic apostrophe
		{"done", "d.o.n.e"},
		{"Rückerstattung", "Ruckerstattung"},
		{`"Возврат выполнен"`, "«Возврат выполнен»"},
		{"Возврат - выполнен", "Возврат — выполнен"},
		{"a\nb", "a<br>b"},
	} {
		if got, want := Form(c.disguised), Form(c.plain); got != want {
			t.Errorf("Form(%q) = %q, want %q (the form of %q)", c.disguised, got, want, c.plain)
		}
	}
	for _, c := range [][2]string{{"возврат", "возвратом"}, {"Готово. Возврат", "Готово Возврат"}, {"выполнен?", "выполнен"}, {"не выполнен", "невыполнен"}} {
		if Form(c[0]) == Form(c[1]) {
			t.Errorf("%q and %q have one form %q", c[0], c[1], Form(c[0]))
		}
	}
}

// Plain ASCII and Russian text in NFKC is canonicalized without an
// allocation into a buffer that has room.
func TestAppendAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 512)
	for _, s := range []string{"Your ticket T-4821: the payment was confirmed, thank you.", "Платёж pay_4821 на 990 RUB подтверждён. Записано расхождение."} {
		if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], s) }); n != 0 {
			t.Errorf("%q: %v allocations", s, n)
		}
	}
}

// table.go is what internal/gen makes of confusables.txt today: a table
// edited by hand, or left behind by a change of its sources, fails here
// (go generate ./canonical writes it again).
func TestTableIsGenerated(t *testing.T) {
	want, err := gen.Source()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("table.go is not what go generate writes; run go generate ./canonical")
	}
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 512)
	s := "Платёж pay_4821 на 990 RUB подтверждён. Записано расхождение: subscription never activated. Я запросил возврат — его одобрит сотрудник."
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], s)
	}
}

// Text the fast path takes as NFKC is NFKC.
func TestFastPathIsNFKC(t *testing.T) {
	for r := rune(0x80); r < 0x20C0; r++ {
		for _, s := range []string{"а" + string(r), string(r) + "\u0301", "е" + string(r), string(r)} {
			if inNFKC(s) && !norm.NFKC.IsNormalString(s) {
				t.Errorf("%q (%U) taken for NFKC", s, r)
			}
		}
	}
}

// AppendSplit leaves a hyphen between letters standing, and folds the
// rest as Append does.
func TestAppendSplit(t *testing.T) {
	if got, want := string(AppendSplit(nil, "Воз\u200bврат-выполнен, we’ve")), Form("возврат")+"-"+Form("выполнен")+", weve"; got != want {
		t.Errorf("AppendSplit = %q, want %q", got, want)
	}
}
