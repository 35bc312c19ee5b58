package config

// Limits bound requests and model calls.
type Limits struct {
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxFileBytes bounds an HTTP message that carries files in base64
	// (evidence data); default 28 MiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	// MaxImageBytes, MaxPDFBytes, MaxPDFPages and MaxPDFChars bound what
	// is read of an attached file: a picture shown to the model (10 MiB),
	// a PDF whose text is read (20 MiB, its first 50 pages, 20 000
	// characters of text).
	MaxImageBytes int      `yaml:"max_image_bytes"`
	MaxPDFBytes   int      `yaml:"max_pdf_bytes"`
	MaxPDFPages   int      `yaml:"max_pdf_pages"`
	MaxPDFChars   int      `yaml:"max_pdf_chars"`
	ModelTimeout  Duration `yaml:"model_timeout"`
	MaxTokens     int      `yaml:"max_tokens"`
	TurnTimeout   Duration `yaml:"turn_timeout"`
}

// check refuses negative limits (zero takes the default).
func (l Limits) check(v *validator) {
	if l.MaxBodyBytes < 0 {
		v.errorf("limits.max_body_bytes", "must be positive")
	}
	for _, f := range []struct {
		name string
		n    int64
	}{{"max_file_bytes", l.MaxFileBytes}, {"max_image_bytes", int64(l.MaxImageBytes)}, {"max_pdf_bytes", int64(l.MaxPDFBytes)},
		{"max_pdf_pages", int64(l.MaxPDFPages)}, {"max_pdf_chars", int64(l.MaxPDFChars)}} {
		if f.n < 0 {
			v.errorf("limits."+f.name, "must be positive")
		}
	}
}
