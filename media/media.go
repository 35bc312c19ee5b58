// Package media reads attached files for the model: the text of a PDF,
// and whether a picture is one a model can be shown. Both are bounded
// (Limits); a file past its limit or that cannot be read is refused with
// an error that says why, so the rest of its message goes on without it.
//
// It knows nothing of channels or turns: they hand it bytes and a
// declared media type and label what it returns as evidence.
package media

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// Default limits.
const (
	DefaultMaxImageBytes = 10 << 20
	DefaultMaxPDFBytes   = 20 << 20
	DefaultMaxPDFPages   = 50
	DefaultMaxPDFRunes   = 20_000
)

// Limits bound what is read of attached files. Zero fields take the
// defaults.
type Limits struct {
	MaxImageBytes int // an image larger than this is not shown (10 MiB)
	MaxPDFBytes   int // a PDF larger than this is not read (20 MiB)
	MaxPDFPages   int // pages read of a PDF, from the first (50)
	MaxPDFRunes   int // characters of text kept from a PDF (20 000)
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	pick := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	return Limits{MaxImageBytes: pick(l.MaxImageBytes, DefaultMaxImageBytes), MaxPDFBytes: pick(l.MaxPDFBytes, DefaultMaxPDFBytes),
		MaxPDFPages: pick(l.MaxPDFPages, DefaultMaxPDFPages), MaxPDFRunes: pick(l.MaxPDFRunes, DefaultMaxPDFRunes)}
}

// ImageTypes are the picture types models are shown.
var ImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// ErrTooLarge is wrapped by the error for a file over its limit.
var ErrTooLarge = errors.New("the file is over the size limit")

// IsPDF reports whether a file of this declared type and content is a PDF.
func IsPDF(mediaType string, data []byte) bool {
	return strings.EqualFold(mediaType, "application/pdf") || bytes.HasPrefix(data, []byte("%PDF-"))
}

// Image returns the media type of a picture a model can be shown: sniffed
// from its bytes (a declared type is not trusted), one of ImageTypes.
func Image(data []byte, l Limits) (string, error) {
	l = l.WithDefaults()
	if len(data) > l.MaxImageBytes {
		return "", fmt.Errorf("%w: %s, the limit for an image is %s", ErrTooLarge, Size(len(data)), Size(l.MaxImageBytes))
	}
	t := http.DetectContentType(data)
	if !slices.Contains(ImageTypes, t) {
		return "", fmt.Errorf("not an image of a type models take (jpeg, png, gif, webp): %s", t)
	}
	return t, nil
}

// PDFText is the text of a PDF's first MaxPDFPages pages, cut to
// MaxPDFRunes characters; cut says whether anything was left out. A PDF
// with no text layer (a scan) is an error, as is one that does not parse.
func PDFText(data []byte, l Limits) (text string, cut bool, err error) {
	l = l.WithDefaults()
	if len(data) > l.MaxPDFBytes {
		return "", false, fmt.Errorf("%w: %s, the limit for a PDF is %s", ErrTooLarge, Size(len(data)), Size(l.MaxPDFBytes))
	}
	defer func() {
		if recover() != nil { // the parser panics on some malformed files
			text, cut, err = "", false, errors.New("the PDF is damaged and could not be read")
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", false, errors.New("not a readable PDF (damaged or encrypted)")
	}
	pages := r.NumPage()
	if pages > l.MaxPDFPages {
		pages, cut = l.MaxPDFPages, true
	}
	var b strings.Builder
	for i := 1; i <= pages && b.Len() < 4*l.MaxPDFRunes; i++ {
		t, err := r.Page(i).GetPlainText(nil)
		if err != nil {
			return "", false, fmt.Errorf("page %d of the PDF could not be read", i)
		}
		if b.Len() > 0 && t != "" {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	text = clean(b.String())
	if strings.TrimSpace(text) == "" {
		return "", false, errors.New("the PDF has no text layer (a scan?); its text could not be read")
	}
	if utf8.RuneCountInString(text) > l.MaxPDFRunes {
		text, cut = string([]rune(text)[:l.MaxPDFRunes]), true
	}
	return text, cut, nil
}

// clean makes extracted text valid UTF-8 without control characters other
// than line breaks and tabs.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		if r == '\r' {
			return '\n'
		}
		return -1
	}, s))
}

// Size renders a byte count for a person: "12 KB", "10 MB".
func Size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", (n+1<<9)>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
