package media

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/media/mediatest"
)

func TestPDFText(t *testing.T) {
	text, cut, err := PDFText(mediatest.PDF("Invoice 42", "Pay by Friday (EUR 120)"), Limits{})
	if err != nil || cut {
		t.Fatalf("PDFText = %q, %v, %v", text, cut, err)
	}
	if !strings.Contains(text, "Invoice 42") || !strings.Contains(text, "Pay by Friday (EUR 120)") {
		t.Errorf("text = %q, want both lines", text)
	}
}

func TestPDFTextCut(t *testing.T) {
	text, cut, err := PDFText(mediatest.PDF(strings.Repeat("abcdefghij", 10)), Limits{MaxPDFRunes: 25})
	if err != nil || !cut || len([]rune(text)) != 25 {
		t.Errorf("PDFText = %q (%d runes), cut %v, %v; want 25 runes, cut", text, len([]rune(text)), cut, err)
	}
}

func TestPDFTextRefusals(t *testing.T) {
	big := mediatest.PDF("x")
	if _, _, err := PDFText(big, Limits{MaxPDFBytes: 10}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: err = %v, want ErrTooLarge", err)
	}
	for name, data := range map[string][]byte{
		"not a pdf": []byte("hello"),
		"truncated": mediatest.PDF("Invoice 42")[:120],
		"no text":   mediatest.PDF(),
	} {
		if text, _, err := PDFText(data, Limits{}); err == nil {
			t.Errorf("%s: text %q, want an error", name, text)
		}
	}
}

func TestImage(t *testing.T) {
	if typ, err := Image(mediatest.PNG(), Limits{}); typ != "image/png" || err != nil {
		t.Errorf("Image(png) = %q, %v", typ, err)
	}
	if _, err := Image(mediatest.PNG(), Limits{MaxImageBytes: 8}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized: err = %v, want ErrTooLarge", err)
	}
	if _, err := Image([]byte("GIF89 not really, plain text"), Limits{}); err == nil {
		t.Error("text taken for an image")
	}
}
