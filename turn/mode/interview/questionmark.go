package interview

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// questionMarks are the characters that end (or, inside a word, mark) a
// question in some script: every punctuation character and every other
// symbol (So) of Unicode whose name has the words QUESTION and MARK, or
// INTERROBANG, except the inverted and initial ones, which open a
// question. The list
// is derived from the character names, and questionmark_test.go derives
// it again from the Unicode character database of the running Go and
// compares: it is not written from memory.
var questionMarks = map[rune]bool{
	0x003F:  true, // QUESTION MARK
	0x037E:  true, // GREEK QUESTION MARK
	0x055E:  true, // ARMENIAN QUESTION MARK
	0x061F:  true, // ARABIC QUESTION MARK
	0x1367:  true, // ETHIOPIC QUESTION MARK
	0x1945:  true, // LIMBU QUESTION MARK
	0x203D:  true, // INTERROBANG
	0x2047:  true, // DOUBLE QUESTION MARK
	0x2048:  true, // QUESTION EXCLAMATION MARK
	0x2049:  true, // EXCLAMATION QUESTION MARK
	0x2753:  true, // BLACK QUESTION MARK ORNAMENT
	0x2754:  true, // WHITE QUESTION MARK ORNAMENT
	0x2CFA:  true, // COPTIC OLD NUBIAN DIRECT QUESTION MARK
	0x2CFB:  true, // COPTIC OLD NUBIAN INDIRECT QUESTION MARK
	0x2E2E:  true, // REVERSED QUESTION MARK
	0x2E54:  true, // MEDIEVAL QUESTION MARK
	0xA60F:  true, // VAI QUESTION MARK
	0xA6F7:  true, // BAMUM QUESTION MARK
	0xFE16:  true, // PRESENTATION FORM FOR VERTICAL QUESTION MARK
	0xFE56:  true, // SMALL QUESTION MARK
	0xFF1F:  true, // FULLWIDTH QUESTION MARK
	0x11143: true, // CHAKMA QUESTION MARK
	0x1F679: true, // HEAVY INTERROBANG ORNAMENT
	0x1F67A: true, // SANS-SERIF INTERROBANG ORNAMENT
	0x1F67B: true, // HEAVY SANS-SERIF INTERROBANG ORNAMENT
	0x1FBC4: true, // NEGATIVE SQUARED QUESTION MARK
}

// questionEnd returns where the question marked by the question mark at
// text[i:] ends. A mark that Unicode does not count as ending a sentence,
// followed by a letter, sits inside a word (Armenian puts it over the
// stressed vowel): the question runs to the sentence's end. Otherwise it
// ends after the mark, with any marks, terminal punctuation and closing
// quotes or brackets right after it ("Да?!»").
func questionEnd(text string, i int) int {
	mark, size := utf8.DecodeRuneInString(text[i:])
	end := i + size
	if r, _ := utf8.DecodeRuneInString(text[end:]); unicode.IsLetter(r) && !unicode.Is(unicode.Sentence_Terminal, mark) {
		for j, r := range text[end:] {
			if unicode.Is(unicode.Sentence_Terminal, r) {
				end += j + utf8.RuneLen(r)
				break
			}
			if j+utf8.RuneLen(r) == len(text[end:]) {
				return len(text)
			}
		}
	}
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		if !questionMarks[r] && !closing(r) && !unicode.Is(unicode.Sentence_Terminal, r) {
			break
		}
		end += size
	}
	return end
}

// closing tells what may follow a sentence's last mark: closing quotes
// and brackets, and the invisible (format characters, variation
// selectors).
func closing(r rune) bool {
	return unicode.In(r, unicode.Pe, unicode.Pf, unicode.Cf, unicode.Mn) || r == '"' || r == '\''
}

// firstQuestion keeps the first question of text ("Какая версия? И
// какая база?" → "Какая версия?"), at a question mark of any script, and
// returns the rest.
func firstQuestion(text string) (string, string) {
	i := strings.IndexFunc(text, func(r rune) bool { return questionMarks[r] })
	if i < 0 {
		return text, ""
	}
	end := questionEnd(text, i)
	rest := strings.TrimSpace(text[end:])
	if rest == "" {
		return text, ""
	}
	return strings.TrimSpace(text[:end]), rest
}

// endsInQuestion tells a text whose last sentence is a question: the
// question one of its question marks marks runs to the end, past only
// spaces, closing marks, the invisible and symbols (an emoji after it).
func endsInQuestion(text string) bool {
	for i, r := range text {
		if !questionMarks[r] {
			continue
		}
		rest := text[questionEnd(text, i):]
		if strings.TrimFunc(rest, func(r rune) bool {
			return unicode.IsSpace(r) || closing(r) || unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r)
		}) == "" {
			return true
		}
	}
	return false
}
