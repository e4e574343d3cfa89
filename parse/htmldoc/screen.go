package htmldoc

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

// Access-screen detection.
//
// A screen is recognised by evidence of its kind together with the absence
// of the document: little prose outside the screen's own markup. Strong
// evidence is markup a screen is built from (a password field, a consent
// manager's or CAPTCHA's elements and scripts, a title naming the screen,
// structured data marking the page not free); weak evidence is a phrase of
// the screen in the visible text. A kind is found when the page has less
// than screenProseChars of prose and one strong or two weak pieces of
// evidence, or less than screenBareChars of prose and one weak piece. A
// long article with a cookie banner or a "subscribe" footer is therefore
// not a screen; a short page that is only a banner is.
//
// Evidence must be the page's, not its furniture: phrases count only in
// text outside links and outside the page's footer, navigation and
// sidebars (a "Cookie settings" or "Subscribe now" link is on every page
// of a site), and markup inside those is not evidence either. Consent
// banners and CAPTCHA widgets are parts of ordinary pages too, so a page
// is a consent wall or a bot challenge only when it is mostly that: the
// text of its screen markup and of the blocks saying the kind's phrases
// is longer than the rest of its text (furniture aside), unless its title
// names a browser check.
//
// Prose is the text of paragraph and quote blocks that are outside marked
// markup (consent managers, paywalls, dialogs) and contain none of the
// screens' phrases.
const (
	screenProseChars = 1000
	screenBareChars  = 250
)

// blockMeta is what screen detection knows of a block beside its text.
type blockMeta struct {
	marked bool // inside screen markup (markedElement)
	chrome bool // inside the page's footer, navigation or a sidebar
	// anchorFrom and anchorTo bound the block's links in the
	// extractor's anchors.
	anchorFrom, anchorTo int32
}

// phrases calls found with each screen phrase block i says outside its
// links (none in the page's furniture); found returns false to stop.
func (x *extractor) phrases(i int, found func(ScreenKind, string) bool) {
	m := x.meta[i]
	if m.chrome {
		return
	}
	text := strings.ToLower(x.blocks[i].Text)
	var links []string // lower-cased, once a phrase is found
	for _, p := range phrases {
		for _, s := range p.subs {
			n := strings.Count(text, s)
			if n == 0 {
				continue
			}
			if links == nil {
				links = make([]string, 0, m.anchorTo-m.anchorFrom)
				for _, a := range x.anchors[m.anchorFrom:m.anchorTo] {
					links = append(links, strings.ToLower(a))
				}
			}
			for _, l := range links {
				n -= strings.Count(l, s)
			}
			if n > 0 && !found(p.kind, s) {
				return
			}
		}
	}
}

// chromeElement reports whether n is page furniture: a footer, a
// navigation or a sidebar, by element or ARIA role.
func chromeElement(n *node) bool {
	switch n.a {
	case atom.Footer, atom.Nav, atom.Aside:
		return true
	}
	switch role, _ := n.attr("role"); role {
	case "contentinfo", "navigation", "complementary":
		return true
	}
	return false
}

// componentKinds are the screens whose markup ordinary pages carry too.
var componentKinds = map[ScreenKind]bool{ScreenConsent: true, ScreenChallenge: true}

// markers are id/class substrings of each kind's markup.
var markers = []struct {
	kind ScreenKind
	subs []string
}{
	{ScreenConsent, []string{"onetrust", "didomi", "qc-cmp", "sp_message", "truste", "cookiebot", "cookie-consent",
		"cookieconsent", "cookie-banner", "cookie-wall", "consent-wall", "consent-banner", "gdpr", "fc-consent", "cmp-container"}},
	{ScreenChallenge, []string{"cf-browser-verification", "challenge-form", "cf-challenge", "cf-turnstile", "g-recaptcha",
		"h-captcha", "px-captcha", "captcha", "challenge-running", "bot-check"}},
	{ScreenPaywall, []string{"paywall", "regwall", "subscriber-only", "subscription-wall", "premium-wall"}},
	{ScreenLogin, []string{"login-wall", "loginwall", "signin-wall", "authwall", "auth-wall"}},
}

// scriptMarkers are substrings of script and frame sources.
var scriptMarkers = []struct {
	kind ScreenKind
	subs []string
}{
	{ScreenChallenge, []string{"challenges.cloudflare.com", "/cdn-cgi/challenge-platform", "captcha-delivery.com",
		"hcaptcha.com", "google.com/recaptcha", "recaptcha.net", "perimeterx", "px-cloud.net"}},
	{ScreenConsent, []string{"cookielaw.org", "consent.cookiebot.com", "privacy-center.org", "consensu.org", "cookie-script.com"}},
}

// phrases are lower-case phrases each kind shows its reader.
var phrases = []struct {
	kind ScreenKind
	subs []string
}{
	{ScreenLogin, []string{"sign in to continue", "log in to continue", "login to continue", "please log in", "please sign in",
		"you must be logged in", "you need to log in", "login required", "sign in to view", "log in to view", "sign in to read",
		"create an account to continue", "join to view", "sign in to see"}},
	{ScreenConsent, []string{"we use cookies", "this site uses cookies", "this website uses cookies", "accept all cookies",
		"accept cookies", "cookie settings", "cookie preferences", "manage cookies", "we value your privacy",
		"your privacy choices", "use of cookies", "before you continue", "reject all", "manage consent"}},
	{ScreenChallenge, []string{"checking your browser", "just a moment", "verify you are human", "verifying you are human",
		"are you a robot", "not a robot", "unusual traffic", "enable javascript and cookies to continue",
		"complete the security check", "press & hold", "press and hold", "ddos protection", "attention required",
		"access to this page has been denied", "prove you are human", "security verification"}},
	{ScreenPaywall, []string{"subscribe to continue", "subscribe to read", "for subscribers only", "subscribers only",
		"this article is for subscribers", "already a subscriber", "to continue reading", "free articles",
		"free article limit", "become a subscriber", "unlock this article", "for paying subscribers",
		"register to continue reading", "subscribe now", "start your subscription"}},
	{ScreenErrorPage, []string{"page not found", "page could not be found", "page you requested", "page you are looking for",
		"page you were looking for", "this page doesn't exist", "this page does not exist", "internal server error",
		"service unavailable", "bad gateway"}},
}

var (
	titleChallenge = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`just a moment|attention required|are you a robot|security check|ddos-guard|verify you are human|human verification|bot verification|captcha|access denied|one more step`)
	})
	titleLogin = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(^|[\s|:–—-])(sign[ -]?in|log[ -]?in)([\s|:–—-]|$)`)
	})
	titleError = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(^|\D)(400|401|403|404|405|410|429|500|502|503|504)(\D|$)|page not found|not found|internal server error|service unavailable|bad gateway|gateway time-?out|forbidden|too many requests|^error$|^oops`)
	})
	notFree = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"isaccessibleforfree"\s*:\s*(false|"false")`) })
)

type screenEvidence struct {
	strong, weak map[ScreenKind][]string
}

func (e *screenEvidence) add(strong bool, kind ScreenKind, what string) {
	m := e.weak
	if strong {
		m = e.strong
	}
	if !slices.Contains(m[kind], what) {
		m[kind] = append(m[kind], what)
	}
}

// markedElement reports whether n's id or class marks screen markup, or n
// is a dialog.
func markedElement(n *node) bool {
	if role, _ := n.attr("role"); n.a == atom.Dialog || role == "dialog" || role == "alertdialog" {
		return true
	}
	ic := n.idClass()
	if ic == "" {
		return false
	}
	for _, m := range markers {
		for _, s := range m.subs {
			if strings.Contains(ic, s) {
				return true
			}
		}
	}
	return false
}

// detectScreen returns the access screen the page is, or nil. x is the
// extractor of the page's blocks, with marks set to markedElement.
func detectScreen(root *node, title string, x *extractor) *AccessScreenError {
	ev := &screenEvidence{strong: map[ScreenKind][]string{}, weak: map[ScreenKind][]string{}}
	// Prose first: a page with enough of it is no screen whatever else it
	// holds, so most articles are decided within their first paragraphs.
	prose := 0
	for i, b := range x.blocks {
		if x.isProseBlock(i, ev) {
			prose += utf8.RuneCountInString(b.Text)
			if prose >= screenProseChars {
				return nil
			}
		}
	}
	collectMarkup(root, ev)
	titled := false // the title names a browser check
	t := strings.ToLower(title)
	if t != "" {
		if titleChallenge().MatchString(t) {
			ev.add(true, ScreenChallenge, "the title names a browser check")
			titled = true
		}
		if titleLogin().MatchString(t) && utf8.RuneCountInString(t) < 80 {
			ev.add(true, ScreenLogin, "the title names a sign-in page")
		}
		if titleError().MatchString(t) {
			ev.add(true, ScreenErrorPage, "the title names an error")
		}
	}
	// Highest score wins; ties go to the kind listed first.
	var best ScreenKind
	bestScore := 0
	for _, k := range []ScreenKind{ScreenChallenge, ScreenLogin, ScreenPaywall, ScreenConsent, ScreenErrorPage} {
		s, w := len(ev.strong[k]), len(ev.weak[k])
		if !(s >= 1 || w >= 2 || prose < screenBareChars && w >= 1) {
			continue
		}
		if componentKinds[k] && !(k == ScreenChallenge && titled) && !x.mostlyScreen(k) {
			continue
		}
		if score := 2*s + w; score > bestScore {
			best, bestScore = k, score
		}
	}
	if best == "" {
		return nil
	}
	evidence := append(slices.Clone(ev.strong[best]), ev.weak[best]...)
	if len(evidence) > 6 {
		evidence = evidence[:6]
	}
	evidence = append(evidence, "only "+strconv.Itoa(prose)+" characters of prose")
	return newAccessScreenError(best, evidence)
}

// isProseBlock reports whether b counts as prose for screen detection: a
// paragraph or quote outside marked markup holding none of the screens'
// phrases in its own text (outside links; none in the page's furniture).
// With ev set, the phrases found are recorded as evidence.
func (x *extractor) isProseBlock(i int, ev *screenEvidence) bool {
	b, m := x.blocks[i], x.meta[i]
	found := false
	x.phrases(i, func(kind ScreenKind, s string) bool {
		found = true
		if ev != nil {
			ev.add(false, kind, "the text says \""+s+"\"")
		}
		return ev != nil
	})
	if ev != nil && b.Kind == Heading && b.Level == 1 && utf8.RuneCountInString(b.Text) < 80 && titleError().MatchString(strings.ToLower(b.Text)) {
		ev.add(true, ScreenErrorPage, "the main heading names an error")
	}
	return !found && !m.marked && (b.Kind == Paragraph || b.Kind == Quote)
}

// mostlyScreen reports whether the page's text, furniture aside, is
// mostly kind k's screen: its marked markup and the blocks saying k's
// phrases are longer than the rest.
func (x *extractor) mostlyScreen(k ScreenKind) bool {
	screen, rest := 0, 0
	for i, b := range x.blocks {
		switch m := x.meta[i]; {
		case m.chrome:
		case m.marked || x.saysPhrase(i, k):
			screen += utf8.RuneCountInString(b.Text)
		default:
			rest += utf8.RuneCountInString(b.Text)
		}
	}
	return screen > rest
}

// saysPhrase reports whether block i says one of kind k's phrases.
func (x *extractor) saysPhrase(i int, k ScreenKind) bool {
	says := false
	x.phrases(i, func(kind ScreenKind, _ string) bool {
		says = kind == k
		return !says
	})
	return says
}

// proseAtLeast reports whether x's blocks hold at least n characters of prose
// as detectScreen counts it.
func (x *extractor) proseAtLeast(n int) bool {
	prose := 0
	for i, b := range x.blocks {
		if x.isProseBlock(i, nil) {
			if prose += utf8.RuneCountInString(b.Text); prose >= n {
				return true
			}
		}
	}
	return false
}

// markedAncestors counts the marked elements above n.
func markedAncestors(n *node) int {
	k := 0
	for p := n.parent; p != nil; p = p.parent {
		if markedElement(p) {
			k++
		}
	}
	return k
}

// collectMarkup gathers strong evidence from elements, visible or not (a
// consent manager's markup is often hidden until a script shows it),
// outside the page's furniture.
func collectMarkup(n *node, ev *screenEvidence) {
	for _, k := range n.kids {
		if k.isText() || chromeElement(k) {
			continue
		}
		switch k.a {
		case atom.Input:
			if t, _ := k.attr("type"); strings.EqualFold(t, "password") {
				ev.add(true, ScreenLogin, "a password field")
			}
		case atom.Script, atom.Iframe:
			src, _ := k.attr("src")
			src = strings.ToLower(src)
			for _, m := range scriptMarkers {
				for _, s := range m.subs {
					if src != "" && strings.Contains(src, s) {
						ev.add(true, m.kind, "a script or frame of a known "+kindNoun(m.kind))
					}
				}
			}
			if typ, _ := k.attr("type"); k.a == atom.Script && strings.EqualFold(typ, "application/ld+json") {
				for _, c := range k.kids {
					if c.isText() && notFree().MatchString(strings.ToLower(c.text)) {
						ev.add(true, ScreenPaywall, "structured data marks the page not free to read")
					}
				}
			}
		}
		if _, ok := k.attr("data-sitekey"); ok {
			ev.add(true, ScreenChallenge, "a CAPTCHA widget")
		}
		if ic := k.idClass(); ic != "" {
			for _, m := range markers {
				for _, s := range m.subs {
					if strings.Contains(ic, s) {
						ev.add(true, m.kind, "markup of a known "+kindNoun(m.kind))
					}
				}
			}
		}
		collectMarkup(k, ev)
	}
}

func kindNoun(k ScreenKind) string {
	switch k {
	case ScreenConsent:
		return "consent manager"
	case ScreenChallenge:
		return "bot challenge"
	case ScreenPaywall:
		return "paywall"
	case ScreenLogin:
		return "login wall"
	}
	return string(k)
}
