// Package htmldoc reads untrusted HTML pages into bounded, structured text.
//
// Parse takes the page's bytes and an explicit Selection: SelectText (every
// visible block of the page) or SelectArticle (the page's main article).
// It returns a Document: the title, text blocks with their structure
// (headings, paragraphs, list items, quotes, preformatted text, table
// rows), the links of the selected content (resolved when a base URL is
// given) and warnings.
//
// What it guarantees:
//
//   - Bounds. At most limits.HTMLMaxBytes of input; at most
//     limits.HTMLMaxNodes nodes (elements, text runs, comments, doctypes as
//     the tokenizer produces them), elements nested at most
//     limits.HTMLMaxDepth deep and at most limits.HTMLMaxAttributes
//     attributes per element, duplicates included. All are counted while
//     tokenizing, so no input makes the tree larger than the limits; a
//     bound that is reached fails the call with limit (never a partial
//     document). Attribute values other than the handful the package reads
//     are dropped as they are tokenized.
//   - Access screens are refused. Login walls, cookie/consent walls, bot
//     challenges, paywalls and error pages (served with any status) fail
//     with an *AccessScreenError, code integrity: the bytes are not the
//     document they stand for. Package sniff uses this same detection and
//     code. Options.DisableAccessScreenRefusal returns such a page with an
//     access_screen warning instead.
//   - Article selection identifies what it returns (ArticleInfo: element,
//     path, method, text size, prose paragraphs, link density) and fails
//     with an *ArticleError (invalid_input) rather than return an index
//     page, navigation or a fragment as an article.
//   - Nothing is silently dropped: flattened tables, hidden elements
//     (hidden text is a common carrier of injected instructions), embedded
//     frames, skipped links, legacy encodings and content that needs
//     scripts to render are each reported as a Warning.
//
// What it does not do: it runs no scripts, loads nothing (frames, styles,
// images), applies no CSS beyond inline display:none and
// visibility:hidden, and does not fetch a base URL. Access-screen and
// article detection are heuristics over markup and text: a screen
// accompanied by a full article is read as the article, and a very short
// article beside a consent banner may be refused as a screen.
//
// Why a tree builder of its own: golang.org/x/net/html's tokenizer is used
// for all lexing, but html.Parse builds its tree without a node or depth
// bound, and its tree construction can create more nodes than the input
// has tokens (reconstructing formatting elements in every paragraph), so it
// cannot honour bounds counted during parsing. The builder here applies
// the standard's implied-end-tag and scope rules that decide which block
// text belongs to, and nothing else (no foster parenting or adoption
// agency, which move text between inline elements but not between blocks).
package htmldoc
