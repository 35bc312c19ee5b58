package turn

import (
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/chat"
	"github.com/arbiterhq/arbiter/llm"
	"github.com/arbiterhq/arbiter/media"
)

// Labels of attachments read for the model: the first line of such
// evidence says what the model is looking at and where it came from.
const (
	pdfTextLabel = "text extracted from the PDF "
	imageLabel   = "image "
)

// readAttachments reads the files that came with the message: a PDF's
// text becomes the evidence's text, under a label naming the file; a
// picture is kept to be shown to the model beside its evidence. A file
// that cannot be read keeps its description with the reason; the rest of
// the message goes on. The bytes are dropped here: nothing keeps them.
// It returns the evidence as read and, per evidence index, the picture.
func readAttachments(in []chat.Evidence, limits media.Limits) ([]chat.Evidence, map[int]llm.Image) {
	var out []chat.Evidence
	var images map[int]llm.Image
	for i, ev := range in {
		if ev.Kind != chat.EvidenceAttachment || len(ev.Data) == 0 {
			continue
		}
		if out == nil {
			out = append([]chat.Evidence(nil), in...) // the caller's slice stays as it was
		}
		desc := strings.TrimSpace(ev.Text)
		switch {
		case media.IsPDF(ev.MediaType, ev.Data):
			ev.Text = pdfEvidence(desc, ev.Data, limits)
		case ev.IsImage() || !strings.Contains(ev.MediaType, "/"):
			typ, err := media.Image(ev.Data, limits)
			if err != nil {
				ev.Text = desc + "\nthe image could not be read: " + err.Error()
				break
			}
			ev.Text, ev.MediaType = imageLabel+desc, typ
			if images == nil {
				images = map[int]llm.Image{}
			}
			images[i] = llm.Image{MediaType: typ, Data: ev.Data}
		default:
			ev.Text = desc + "\ncontent not read: only PDFs and images are read"
		}
		ev.Data = nil
		out[i] = ev
	}
	if out == nil {
		return in, nil
	}
	return out, images
}

// pdfEvidence is a PDF's evidence text: its label and text, or its
// description and why it could not be read.
func pdfEvidence(desc string, data []byte, limits media.Limits) string {
	text, cut, err := media.PDFText(data, limits)
	if err != nil {
		return desc + "\nthe PDF could not be read: " + err.Error()
	}
	l := limits.WithDefaults()
	note := ""
	if cut {
		note = " (cut: at most " + strconv.Itoa(l.MaxPDFPages) + " pages, " + strconv.Itoa(l.MaxPDFRunes) + " characters are read)"
	}
	return pdfTextLabel + desc + note + ":\n" + text
}

// attachmentName is the name of the file attachment evidence describes:
// its first line, without the label reading it put there.
func attachmentName(text string) string {
	first := strings.TrimSpace(strings.SplitN(text, "\n", 2)[0])
	for _, label := range []string{pdfTextLabel, imageLabel} {
		if rest, ok := strings.CutPrefix(first, label); ok {
			first = rest
			break
		}
	}
	if i := strings.Index(first, " (cut: "); i >= 0 {
		first = first[:i]
	}
	return strings.TrimSuffix(first, ":")
}

// noteImages remembers which of the messages this turn adds carry a
// picture: evidence i of the message became s.added[at].
func noteImages(s *state, i, at int) {
	img, ok := s.images[i]
	if !ok {
		return
	}
	if s.addedImages == nil {
		s.addedImages = map[int]llm.Image{}
	}
	s.addedImages[at] = img
}
