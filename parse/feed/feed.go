package feed

import (
	"time"
)

// Format names the syndication format a feed was read as.
type Format string

const (
	RSS090 Format = "rss0.90" // RDF-based, namespace http://my.netscape.com/rdf/simple/0.9/
	RSS091 Format = "rss0.91"
	RSS092 Format = "rss0.92"
	RSS20  Format = "rss2.0"
	// RSS is an <rss> feed whose version attribute is missing or unknown;
	// it is read as RSS 2.0, with a warning.
	RSS    Format = "rss"
	RSS10  Format = "rss1.0" // RDF Site Summary, namespace http://purl.org/rss/1.0/
	Atom10 Format = "atom1.0"
	Atom03 Format = "atom0.3" // the 2003 draft, namespace http://purl.org/atom/ns#
)

// Feed is what Parse returns.
type Feed struct {
	Format Format `json:"format"`
	// SourceURL is the URL the caller gave; relative links are resolved
	// against it (and any xml:base in the feed).
	SourceURL   string `json:"source_url"`
	Title       string `json:"title"`
	Link        string `json:"link,omitempty"`
	Description string `json:"description,omitempty"`
	Language    string `json:"language,omitempty"`
	// ID is the Atom feed's id.
	ID      string `json:"id,omitempty"`
	Updated *Date  `json:"updated,omitempty"`
	// Entries are the first entries of the feed, in document order, at
	// most the caller's limit.
	Entries []Entry `json:"entries"`
	// TotalEntries counts every entry in the feed; OmittedEntries those
	// beyond the limit, which were parsed and checked (their warnings and
	// duplicates are reported) but are not returned.
	TotalEntries   int `json:"total_entries"`
	OmittedEntries int `json:"omitted_entries"`
	// Duplicates are groups of entries sharing an id or a link, across
	// all entries (omitted ones included).
	Duplicates []Duplicate `json:"duplicates"`
	Warnings   []Warning   `json:"warnings"`
	// Nodes and Depth are what the parser counted, against
	// limits.FeedMaxNodes and limits.FeedMaxDepth.
	Nodes int `json:"nodes"`
	Depth int `json:"depth"`
}

// Entry is one item (RSS) or entry (Atom).
type Entry struct {
	// Index is the entry's position among all entries of the feed.
	Index int `json:"index"`
	// ID is the guid (RSS 2.0), rdf:about (RSS 1.0) or id (Atom), as
	// written.
	ID    string `json:"id,omitempty"`
	Title string `json:"title"`
	// Link is the entry's web page, resolved to an absolute URL.
	Link string `json:"link,omitempty"`
	// Summary and Content are as the feed holds them; SummaryType and
	// ContentType say how to read them: "text", "html" (markup as
	// text), "xhtml" (the text of inline XHTML), or a media type.
	Summary     string `json:"summary,omitempty"`
	SummaryType string `json:"summary_type,omitempty"`
	Content     string `json:"content,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// ContentSource is an Atom content src: the content is elsewhere.
	ContentSource string      `json:"content_source,omitempty"`
	Authors       []string    `json:"authors,omitempty"`
	Categories    []string    `json:"categories,omitempty"`
	Published     *Date       `json:"published,omitempty"`
	Updated       *Date       `json:"updated,omitempty"`
	Enclosures    []Enclosure `json:"enclosures,omitempty"`
}

// Enclosure is an attached file (a podcast episode, say).
type Enclosure struct {
	URL    string `json:"url"`
	Type   string `json:"type,omitempty"`
	Length int64  `json:"length,omitempty"`
}

// Date keeps a feed's date three ways, never substituting one for another.
// Original is the text as written (surrounding whitespace removed). Time
// is the instant in the offset the feed wrote; UTC is the same instant in
// UTC. When the text does not name an instant (unparseable, no time zone,
// an ambiguous zone abbreviation), Time and UTC are nil and Problem says
// why; the feed's Warnings report it too.
type Date struct {
	Original string     `json:"original"`
	Time     *time.Time `json:"time,omitempty"`
	UTC      *time.Time `json:"utc,omitempty"`
	Problem  string     `json:"problem,omitempty"`
}

// Duplicate is a group of entries sharing an id (By "id") or a link (By
// "link"). Conflict is set when they differ in content; Fields names the
// fields that differ from the first entry of the group.
type Duplicate struct {
	By       string   `json:"by"`
	Key      string   `json:"key"`
	Entries  []int    `json:"entries"`
	Conflict bool     `json:"conflict"`
	Fields   []string `json:"fields,omitempty"`
}

// Warning is a problem that did not stop the parse. Entry is the index of
// the entry concerned, or nil for the feed itself.
type Warning struct {
	Code    string `json:"code"`
	Entry   *int   `json:"entry,omitempty"`
	Message string `json:"message"`
}

// Warning codes.
const (
	WarnDate        = "date_unparsed"    // a date names no instant; Original is kept
	WarnWeekday     = "date_weekday"     // a date's weekday does not match its day
	WarnLink        = "link_invalid"     // a link does not parse or is not http(s); left out
	WarnBase        = "base_invalid"     // an xml:base does not parse; the outer base is used
	WarnNoIdentity  = "no_identity"      // an entry has neither id nor link: duplicates cannot be found
	WarnNoVersion   = "no_version"       // an <rss> without a known version, read as RSS 2.0
	WarnLength      = "enclosure_length" // an enclosure length is not a number; left out
	WarnUntitled    = "untitled"         // an entry has no title
	WarnDTDEntities = "dtd_entities"     // the RSS 0.91 DOCTYPE's HTML entities were recognised (the DTD was not read)
	WarnRepaired    = "repaired"         // the XML was not well-formed: what was repaired, and where
	WarnNoChannel   = "no_channel"       // an <rss> without <channel>: a feed with no channel data
	WarnAtom03      = "atom_0.3"         // an Atom 0.3 feed, read with its element names mapped to Atom 1.0's
)
