package htmldoc

import (
	"fmt"
	"strings"

	"github.com/capkit/capkit/fault"
)

// Reasons Parse fails beyond limits and malformed options, for errors.Is.
var (
	// ErrAccessScreen marks a page that is an access screen (login wall,
	// consent wall, bot challenge, paywall or error page) rather than the
	// document. Its fault code is integrity: see AccessScreenError.
	ErrAccessScreen = fault.NewMark("the page is an access screen, not the document")
	// ErrNoArticle marks a page in which article selection found no
	// article, or found something that is not prose.
	ErrNoArticle = fault.NewMark("no article in the page")
)

// ScreenKind names a kind of access screen.
type ScreenKind string

const (
	ScreenLogin     ScreenKind = "login"         // a sign-in wall
	ScreenConsent   ScreenKind = "consent"       // a cookie or consent wall
	ScreenChallenge ScreenKind = "bot_challenge" // a CAPTCHA or browser check
	ScreenPaywall   ScreenKind = "paywall"       // a subscription wall
	ScreenErrorPage ScreenKind = "error_page"    // an error page (served with any status)
)

func (k ScreenKind) describe() string {
	switch k {
	case ScreenLogin:
		return "a login wall"
	case ScreenConsent:
		return "a cookie/consent wall"
	case ScreenChallenge:
		return "a bot challenge (CAPTCHA or browser check)"
	case ScreenPaywall:
		return "a paywall"
	case ScreenErrorPage:
		return "an error page"
	}
	return string(k)
}

// AccessScreenError reports that the bytes are an access screen. Its code is
// fault.Integrity, the code capkit uses for "these bytes are not the
// document they claim to be" (package sniff uses the same code for a
// wrong-format body). It is deliberately not fault.Denied: denied means
// capkit's own policy refused the call, which a host must be able to tell
// apart from a site refusing a fetch.
//
// Evidence lists what was matched, in capkit's own words (never page text).
// It unwraps to ErrAccessScreen and to a *fault.Error.
type AccessScreenError struct {
	Kind     ScreenKind
	Evidence []string
	fault    *fault.Error
}

func newAccessScreenError(kind ScreenKind, evidence []string) *AccessScreenError {
	e := &AccessScreenError{Kind: kind, Evidence: evidence}
	e.fault = fault.New(fault.Integrity, "the page is %s, not the document (evidence: %s); fetch it with access, or treat the source as unavailable",
		kind.describe(), strings.Join(evidence, "; "))
	return e
}

// overridden is the warning of a screen returned as a document.
func (e *AccessScreenError) overridden() string {
	return fmt.Sprintf("the page looks like %s (evidence: %s) and is returned only because the refusal was overridden: its text may be the screen's, not the document's",
		e.Kind.describe(), strings.Join(e.Evidence, "; "))
}

func (e *AccessScreenError) Error() string   { return e.fault.Message }
func (e *AccessScreenError) Unwrap() []error { return []error{ErrAccessScreen, e.fault} }

// ArticleError reports that article selection found no article. Candidate
// describes the best element considered, when there was one. Its code is
// fault.InvalidInput: the page does not hold what was asked of it; the text
// selection still reads it. It unwraps to ErrNoArticle and a *fault.Error.
type ArticleError struct {
	Reason    string
	Candidate *ArticleInfo
	fault     *fault.Error
}

func newArticleError(reason string, cand *ArticleInfo) *ArticleError {
	e := &ArticleError{Reason: reason, Candidate: cand}
	msg := "no article found: " + reason
	if cand != nil {
		msg += "; best candidate " + cand.String()
	}
	e.fault = fault.New(fault.InvalidInput, "%s (use the text selection to read the page as it is)", msg)
	return e
}

func (e *ArticleError) Error() string   { return e.fault.Message }
func (e *ArticleError) Unwrap() []error { return []error{ErrNoArticle, e.fault} }
