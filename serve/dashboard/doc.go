// Package dashboard is the audit page: a front door beside
// serve/mcpserver that shows an operator what the agents did, read from
// an audit.Source (the trail file, the shared store, or the host's own
// recent events in memory) and from the host's state (budgets, upstream
// tools awaiting review or withdrawn).
//
// It serves one page and a read-only JSON and server-sent-events API
// (GET only), everything embedded in the binary: the page, its script
// and its style are written by hand here, with no third-party asset, so
// that the strict Content-Security-Policy it sends (nothing inline,
// nothing from elsewhere) holds and nothing is fetched from outside. The
// charts are SVG the script draws.
//
// Who may read it: loopback only, unless a token is given; with one,
// each request carries "Authorization: Bearer T", or the cookie a first
// navigation with ?token=T set (HttpOnly, SameSite=Strict), which is
// answered by a redirect to the same address without the token, so the
// token does not stay in the address bar or the history. The Host header
// is checked as serve/mcpserver checks it (DNS rebinding).
//
// What it never shows: an argument's value, a path, a pattern or any
// content. An event does not hold them (package audit), and the API's
// rows are made member by member from the event's counted fields, so
// nothing an event might carry besides them (its shape) is passed on.
package dashboard
