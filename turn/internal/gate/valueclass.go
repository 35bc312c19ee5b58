package gate

import (
	"regexp"
	"strings"
)

// valueClass is what a value names by its form alone: a place data goes
// to (a link, an e-mail address, a phone number) or an account money goes
// to (an IBAN, a card number). Dates, times, amounts, ids and codes are
// none of these, however many digits and dashes they hold.
type valueClass uint8

// Value classes.
const (
	classNone valueClass = iota
	classURL
	classEmail
	classPhone
	classAccount // an IBAN
	classCard
)

func (c valueClass) String() string {
	return [...]string{"none", "url", "email", "phone", "account", "card"}[c]
}

// maxClassedRunes bounds the values classified: longer text is a message,
// not one address or number (a link is still told by its scheme).
const maxClassedRunes = 254

// classOf tells a value's class by its real form: a link by its scheme;
// an e-mail address by local part, "@" and a domain with a top-level
// label; an IBAN by country, length and its mod-97 check digits; a card
// number by its network's prefix and length and the Luhn check; a phone
// number in E.164 or a national format with a plausible number of digits.
func classOf(v string) valueClass {
	v = strings.TrimSpace(v)
	lower := strings.ToLower(v)
	switch {
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		return classURL
	case len(v) > maxClassedRunes*4 || len([]rune(v)) > maxClassedRunes:
		return classNone
	case emailForm.MatchString(v):
		return classEmail
	case isIBAN(v):
		return classAccount
	case isCard(v):
		return classCard
	case isPhone(v):
		return classPhone
	}
	return classNone
}

var emailForm = regexp.MustCompile(`^[\p{L}\p{N}.!#$%&'*+/=?^_{|}~-]+@[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?(?:\.[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?)*\.\p{L}[\p{L}\p{N}-]*\p{L}$`)

// ibanLengths is the length of an IBAN in each country of the IBAN
// registry; an IBAN of a country not listed may have 15 to 34 characters.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
	"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// isIBAN reports whether v is an IBAN, written whole or in groups split by
// single spaces: two letters, two check digits and the account, of the
// country's length, whose mod-97 remainder is 1.
func isIBAN(v string) bool {
	s, ok := ungroup(strings.ToUpper(v), " ")
	if !ok || len(s) < 15 || len(s) > 34 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter, digit := c >= 'A' && c <= 'Z', c >= '0' && c <= '9'
		if i < 2 && !letter || i >= 2 && i < 4 && !digit || !letter && !digit {
			return false
		}
	}
	if n, known := ibanLengths[s[:2]]; known && n != len(s) {
		return false
	}
	rem := 0
	for _, c := range s[4:] + s[:4] {
		if c >= 'A' {
			rem = (rem*100 + int(c-'A'+10)) % 97
		} else {
			rem = (rem*10 + int(c-'0')) % 97
		}
	}
	return rem == 1
}

// isCard reports whether v is a payment card number, whole or in groups
// split by single spaces or hyphens: the prefix and a length of a card
// network, and a valid Luhn check digit.
func isCard(v string) bool {
	s, ok := ungroup(v, " -")
	if !ok || len(s) < 12 || len(s) > 19 || !allDigits(s) || !cardNetwork(s) {
		return false
	}
	sum := 0
	for i := range len(s) {
		d := int(s[len(s)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// cardNetwork reports whether digits start as a card network's numbers do
// and have one of its lengths.
func cardNetwork(s string) bool {
	n := len(s)
	p2, p4 := atoiPrefix(s, 2), atoiPrefix(s, 4)
	switch {
	case s[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55 || p4 >= 2221 && p4 <= 2720: // Mastercard
		return n == 16
	case p2 == 34 || p2 == 37: // American Express
		return n == 15
	case p4 == 6011 || p2 == 65 || p2 == 64 || p2 == 62: // Discover, UnionPay
		return n >= 16 && n <= 19
	case p4 >= 3528 && p4 <= 3589: // JCB
		return n >= 16 && n <= 19
	case p2 == 36 || p2 == 38 || p2 == 30: // Diners Club
		return n >= 14 && n <= 19
	case p4 >= 2200 && p4 <= 2204: // Mir
		return n >= 16 && n <= 19
	case p2 == 50 || p2 >= 56 && p2 <= 69: // Maestro
		return n >= 12 && n <= 19
	}
	return false
}

// ungroup removes the separators of v that stand alone between two
// characters that are not separators; ok is false when two separators
// meet or one begins or ends v.
func ungroup(v, seps string) (string, bool) {
	var b strings.Builder
	prevSep := true
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(seps, v[i]) >= 0 {
			if prevSep {
				return "", false
			}
			prevSep = true
			continue
		}
		prevSep = false
		b.WriteByte(v[i])
	}
	return b.String(), !prevSep
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func atoiPrefix(s string, n int) int {
	v := 0
	for i := 0; i < n && i < len(s); i++ {
		v = v*10 + int(s[i]-'0')
	}
	return v
}

// isPhone reports whether v is a phone number: E.164 ("+", then 8 to 15
// digits, the first not 0), or a national format — digit groups split by
// single spaces, hyphens or dots (one of the last two), the area code
// perhaps in parentheses — that a country writes: North American
// ([1] NXX NXX XXXX), a trunk "0" and 9 to 12 digits, a trunk "8" and 11,
// or an international "00" and up to 15. Digits with no "+" and no
// grouping are an id, not a number to call; groups that hold a date, or a
// single digit past the first (a decimal, a version), are none.
func isPhone(v string) bool {
	plus := strings.HasPrefix(v, "+")
	groups, ok := phoneGroups(strings.TrimPrefix(v, "+"))
	if !ok || dateRun(groups) {
		return false
	}
	digits := ""
	for i, g := range groups {
		if i > 0 && len(g) < 2 {
			return false
		}
		digits += g
	}
	if strings.Count(digits, digits[:1]) == len(digits) {
		return false // 0000-0000-0000: a placeholder
	}
	n := len(digits)
	switch {
	case plus:
		return n >= 8 && n <= 15 && digits[0] != '0'
	case len(groups) < 2:
		return false
	case strings.HasPrefix(digits, "00"):
		return n >= 10 && n <= 15
	case digits[0] == '0':
		return n >= 9 && n <= 12
	case digits[0] == '8' && n == 11:
		return true
	}
	if groups[0] == "1" {
		groups = groups[1:]
	}
	return len(groups) == 3 && len(groups[0]) == 3 && len(groups[1]) == 3 && len(groups[2]) == 4 &&
		groups[0][0] >= '2' && groups[1][0] >= '2'
}

// dateRun reports whether three groups in a row read as a date: a year of
// 19xx or 20xx before or after two groups of one or two digits.
func dateRun(groups []string) bool {
	year := func(g string) bool { return len(g) == 4 && (g[:2] == "19" || g[:2] == "20") }
	short := func(g string) bool { return len(g) <= 2 }
	for i := 0; i+2 < len(groups); i++ {
		a, b, c := groups[i], groups[i+1], groups[i+2]
		if year(a) && short(b) && short(c) || short(a) && short(b) && year(c) {
			return true
		}
	}
	return false
}

// phoneGroups splits the digits of a possible phone number into groups at
// its separators: spaces, and one kind of "-" or "."; one group may stand
// in parentheses (an area code of 1 to 5 digits), after the start or a
// space. ok is false for any other character or a separator out of place.
func phoneGroups(s string) (groups []string, ok bool) {
	var mark byte
	start, open, parens := -1, false, false
	prev := byte(' ') // what came before, as a separator: the start counts as a space
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if start < 0 {
				start = i
			}
		case c == '(' && !parens && !open && prev == ' ' && start < 0:
			open = true
		case c == ')' && open && start >= 0 && i-start <= 5:
			open, parens = false, true
			groups, start = append(groups, s[start:i]), -1
		case (c == ' ' || c == '-' || c == '.') && (start >= 0 || prev == ')') && !open:
			if c != ' ' {
				if mark != 0 && mark != c {
					return nil, false
				}
				mark = c
			}
			if start >= 0 {
				groups, start = append(groups, s[start:i]), -1
			}
		default:
			return nil, false
		}
		prev = c
		if c >= '0' && c <= '9' {
			prev = '0'
		}
	}
	if start < 0 || open {
		return nil, false
	}
	return append(groups, s[start:]), true
}
