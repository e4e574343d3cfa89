// Package feed reads untrusted RSS and Atom feeds into bounded, checked
// entries.
//
// Parse takes the feed's bytes, the URL it came from and an explicit entry
// limit, and returns a Feed: its title and link, the first entries (at most
// the limit) and exact counts of the rest, duplicate and conflicting
// entries, and warnings. RSS 0.90, 0.91, 0.92 and 2.0, RSS 1.0 (RDF Site
// Summary), Atom 1.0 and the Atom 0.3 draft are read, with the Dublin Core
// and content modules, namespaces resolved.
//
// What it guarantees:
//
//   - Bounds. At most limits.FeedMaxBytes of input; at most
//     limits.FeedMaxNodes nodes (elements, comments, processing
//     instructions, declarations), elements nested at most
//     limits.FeedMaxDepth deep, limits.FeedMaxAttributes attributes per
//     element, and an entry limit of 1 to limits.FeedMaxEntries. Nodes and
//     depth are counted on encoding/xml's token stream as it is read, before
//     anything is built, so no input makes the tree larger; a bound that is
//     reached fails the call with limit (never a partial feed).
//   - No entity expansion. encoding/xml never reads external entities and
//     knows only the five predefined entities (and numeric references);
//     Parse refuses every DOCTYPE except RSS 0.91's (PUBLIC or SYSTEM
//     form, without an internal subset), whose DTD it does not read either (it supplies that DTD's HTML entities from
//     xml.HTMLEntity and says so in a warning). A billion-laughs feed fails
//     at its DOCTYPE, in one linear pass over the bytes.
//   - Nothing is dropped silently. Entries past the limit are parsed and
//     checked like the others, counted in OmittedEntries, and their
//     warnings and duplicates are reported. Entries sharing an id or a link
//     are reported as Duplicates, as conflicts when their content differs.
//   - Dates keep three distinct fields: the original text, the instant in
//     the offset the feed wrote, and the instant in UTC. A date that names
//     no instant (unparseable, no time zone, an ambiguous zone
//     abbreviation such as CET) keeps its text, gets a Problem and a
//     warning, and is never replaced by a guess.
//   - Repairs are reported. A feed that is not well-formed XML (a bare
//     "&", an HTML entity such as &copy; without a DTD, a mismatched or
//     stray end tag) is read again in encoding/xml's lenient mode, as a
//     lenient feed reader would, with the same bounds; each repair is a
//     warning naming its line and column (at most
//     limits.FeedMaxRepairWarnings listed, the rest counted). An <rss>
//     without a channel is a feed with no entries, with a warning. Input
//     that cannot be repaired (invalid UTF-8, truncation, duplicate
//     attributes) still fails with invalid_input.
//   - Links are resolved against the source URL, when one is given, and
//     any xml:base; links that do not parse, are not http(s) (javascript:,
//     data:) or stay relative are left out with a warning.
//
// What it does not do: it fetches nothing (not the feed, not a DTD, not
// content src), does not sanitize HTML in summaries (Summary and Content
// are returned as the feed holds them, typed; WriteText reduces HTML to
// text) and does not read JSON Feed.
package feed
