package script

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	pathscope "github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel/catalog"
)

// Labels are not stored with what a script writes: a later read has the
// label of where it reads. So a call that is not read-only is held to
// where it stores (docs/provenance.md, "What it guarantees"): a
// destination a read could be labelled trusted from takes only trusted
// data, whatever the rules of its arguments say, and data whose readers
// are restricted goes only where every read keeps them.

// place is where a call stores or from where it copies: a directory or
// file (kind root, an absolute path, everything below it included), an
// upstream, a URL's host, the text archive, or a tool's own state.
type place = resource

// textArchive names the text archive's store.
const textArchive = "text_archive"

// storeArgs are the arguments naming files or directories a call
// changes (a move's source too: its directory loses it), and copyArgs,
// by tool, those naming what a call copies into them.
var (
	storeArgs = append(slices.Clone(pathArgs), "destination", "staging")
	copyArgs  = map[string][]string{
		"move_file": {"source"}, "file_copy": {"source"}, "dir_publish": {"staging"},
		"zip_create": {"dir"}, "zip_extract": {"archive"},
		"archive_add": {"path"}, "semindex_add": {"path"}, "lexindex_update": {"mutations"},
	}
)

// places are where a call of entry stores and what it copies from there:
// the files and directories its path arguments name (the effect's first
// root when it names none), an upstream, the URL's host, the text
// archive.
func (m *monitor) places(entry *catalog.Entry, obj map[string]jsontext.Value) (dests, from []place) {
	e := entry.Effect
	if up, ok := e.Upstream(); ok {
		return []place{{"upstream", up}}, nil
	}
	switch e {
	case capability.NetFetch:
		if u, ok := strArg(obj, "url"); ok {
			return []place{{"host", destination(u)}}, nil
		}
		return nil, nil
	case capability.TextArchiveWrite, capability.TextArchiveFetch:
		if u, ok := strArg(obj, "url"); ok {
			from = append(from, place{"host", destination(u)})
		}
		return []place{{"tool", textArchive}}, append(from, m.paths(capability.ReadFile, obj, copyArgs[entry.Name], false)...)
	case capability.RunShell, capability.RunTest:
		// A command reads and writes its roots as its text says: all of
		// them are where it stores; what it reads is not followed.
		for _, r := range m.sess.Capabilities().Roots(e) {
			dests = append(dests, place{"root", r})
		}
		return dests, nil
	}
	dests = m.paths(e, obj, storeArgs, true)
	if len(dests) == 0 {
		dests = []place{{"tool", entry.Name}}
	}
	if from = m.paths(e, obj, copyArgs[entry.Name], false); entry.Name == "zip_create" && len(from) == 0 {
		from = m.paths(e, obj, nil, true) // the first root, dir's default
	}
	return dests, from
}

// paths are the absolute paths the arguments keys name in e's roots
// (lexically and where symbolic links lead), mutations' members' paths
// for a key "mutations"; the effect's first root when none does and
// orRoot.
func (m *monitor) paths(e capability.Effect, obj map[string]jsontext.Value, keys []string, orRoot bool) []place {
	roots := m.sess.Capabilities().Roots(e)
	if len(roots) == 0 {
		return nil
	}
	sc := pathscope.In(roots, capability.Protected{})
	var out []place
	add := func(p string) {
		if root, rel, err := sc.Lexical(p); err == nil {
			abs := filepath.Join(root, rel)
			out = append(out, place{"root", abs})
			if real := realPath(root, abs); real != abs {
				out = append(out, place{"root", real})
			}
		}
	}
	for _, k := range keys {
		if p, ok := strArg(obj, k); ok {
			add(p)
		}
	}
	var muts []struct {
		Path string `json:"path"`
	}
	if slices.Contains(keys, "mutations") && obj["mutations"] != nil && json.Unmarshal(obj["mutations"], &muts) == nil {
		for _, mu := range muts {
			if mu.Path != "" {
				add(mu.Path)
			}
		}
	}
	if len(out) == 0 && orRoot {
		out = append(out, place{"root", roots[0]})
	}
	return out
}

// realPath is where abs, in root, lies once the symbolic links of its
// longest existing prefix are resolved, named under root when it stays
// there (a root reached through a link keeps its name).
func realPath(root, abs string) string {
	real, rroot := resolvedPath(abs), resolvedPath(root)
	if rel, err := filepath.Rel(rroot, real); err == nil && within(rroot, real) {
		return filepath.Join(root, rel)
	}
	return real
}

// resolvedPath is abs with the symbolic links of its longest existing
// prefix resolved.
func resolvedPath(abs string) string {
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(p) == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

func strArg(obj map[string]jsontext.Value, k string) (string, bool) {
	if obj[k] == nil {
		return "", false
	}
	var s string
	return s, json.Unmarshal(obj[k], &s) == nil && s != ""
}

// overlaps reports whether one of two absolute paths holds the other.
func overlaps(a, b string) bool { return within(a, b) || within(b, a) }

// trustedPlace is the Trusted pattern that makes some read of p trusted
// ("" for none): for a destination, a read of anything p holds or is
// held by (whole is false); for what a call copies, a read of p itself
// and all below it (whole is true, and then "" means untrusted).
func (m *monitor) trustedPlace(p place, whole bool) string {
	for _, pat := range m.p.Trusted {
		if slices.Contains(m.p.Sealed, pat) {
			continue
		}
		kind, name, _ := strings.Cut(pat, ":")
		switch {
		case kind == "tool":
			if m.toolReads(name, p, whole) {
				return pat
			}
		case kind != p.kind:
		case kind == "root" && whole:
			if within(filepath.Clean(name), p.name) {
				return pat
			}
		case kind == "root":
			if overlaps(filepath.Clean(name), p.name) {
				return pat
			}
		case matches(pat, "", p):
			return pat
		}
	}
	return ""
}

// toolReads reports whether tool's results may come from p: a file tool
// granted on a root p overlaps, a tool of p's upstream, net_fetch for a
// host, the text archive's tools for it.
func (m *monitor) toolReads(tool string, p place, whole bool) bool {
	if p.kind == "tool" && p.name == tool {
		return true
	}
	e, _, ok := m.sess.Runtime().Catalog().Lookup(tool)
	if !ok {
		return false
	}
	_, upstream := e.Effect.Upstream()
	switch p.kind {
	case "root":
		if upstream || e.Effect == capability.NetFetch || e.Effect == capability.CatalogRead {
			return false
		}
		for _, r := range m.sess.Capabilities().Roots(e.Effect) {
			if (whole && within(r, p.name)) || (!whole && overlaps(r, p.name)) {
				return true
			}
		}
	case "upstream":
		up, ok := e.Effect.Upstream()
		return ok && up == p.name
	case "host":
		return e.Effect == capability.NetFetch
	case "tool":
		return p.name == textArchive && strings.HasPrefix(string(e.Effect), "text_archive")
	}
	return false
}

// placeReaders are who may read what p holds, by the Readers patterns
// of its kind that hold it (nil: anyone; tool patterns restrict one
// tool's reads, not the others'); for what a call copies from (whole),
// those of every directory p overlaps, each a restriction of its own.
func (m *monitor) placeReaders(p place, whole bool) [][]string {
	var out [][]string
	for pat, rs := range m.p.Readers {
		kind, name, _ := strings.Cut(pat, ":")
		hit := false
		switch {
		case kind != p.kind || kind == "tool":
		case kind == "root" && whole:
			hit = overlaps(filepath.Clean(name), p.name)
		case kind == "root":
			hit = within(filepath.Clean(name), p.name)
		default:
			hit = matches(pat, "", p)
		}
		if hit {
			out = append(out, rs)
		}
	}
	return out
}

// intersect is who may read data held to every one of rs (nil: anyone).
func intersect(rs [][]string) []string {
	if len(rs) == 0 {
		return nil
	}
	out := slices.Clone(rs[0])
	for _, r := range rs[1:] {
		out = slices.DeleteFunc(out, func(d string) bool { return !slices.Contains(r, d) })
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// checkStores refuses a call that stores data of untrusted sources, or
// made under control that depends on them, where a read would be
// labelled trusted, and one that stores data whose readers are
// restricted where a read would not keep them.
func (m *monitor) checkStores(ctx context.Context, entry *catalog.Entry, args json.RawMessage, members map[string][]int32, lb *callLabels) error {
	if len(m.p.Trusted) == 0 && len(m.p.Readers) == 0 {
		return nil
	}
	var obj map[string]jsontext.Value
	_ = json.Unmarshal(args, &obj)
	dests, from := m.places(entry, obj)
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, d := range dests {
		pat := m.trustedPlace(d, false)
		if pat == "" {
			continue
		}
		where := fmt.Sprintf("it stores into %s, which %s trusts, so every argument and the call itself must depend on trusted data only, whatever [tool.%s.provenance] says", m.shown(d), pat, entry.Name)
		for _, name := range names {
			if v := members[name]; m.untrusted(v) {
				m.audit(ctx, entry.Name, "denied", name, v)
				return fault.New(fault.Denied, "provenance: %s's argument %q depends on untrusted data: %s; %s", entry.Name, name, m.explain(v), where)
			}
		}
		if m.untrusted(lb.Control) {
			m.audit(ctx, entry.Name, "denied", "", lb.Control)
			return fault.New(fault.Denied, "provenance: the call of %s is made under control that depends on untrusted data (%s): %s; %s", entry.Name, strings.Join(lb.Under, "; "), m.explain(lb.Control), where)
		}
		for _, f := range from {
			if m.trustedPlace(f, true) == "" {
				m.audit(ctx, entry.Name, "denied", "", nil)
				return fault.New(fault.Denied, "provenance: %s copies data of %s, which is not trusted; %s", entry.Name, m.shown(f), where)
			}
		}
	}
	return m.checkStoreReaders(ctx, entry.Name, dests, from, names, members, lb.Control)
}

// checkStoreReaders holds a call's data whose readers are restricted to
// the readers of where it stores (a host is a reader itself: the
// arguments' readers rules decide what goes there).
func (m *monitor) checkStoreReaders(ctx context.Context, tool string, dests, from []place, names []string, members map[string][]int32, control []int32) error {
	type held struct {
		what    string
		readers []string
		ids     []int32
	}
	var data []held
	for _, name := range append(names, "") {
		l := control
		what := "the call's control"
		if name != "" {
			l, what = members[name], fmt.Sprintf("argument %q", name)
		}
		for _, id := range l {
			if int(id) < len(m.srcs) && m.srcs[id].readers != nil {
				data = append(data, held{what + " (data of " + m.srcs[id].info.Name + ")", m.srcs[id].readers, []int32{id}})
			}
		}
	}
	for _, f := range from {
		for _, rs := range m.placeReaders(f, true) {
			data = append(data, held{"data copied from " + m.shown(f), rs, nil})
		}
	}
	if len(data) == 0 {
		return nil
	}
	for _, d := range dests {
		if d.kind == "host" {
			continue
		}
		dr := intersect(m.placeReaders(d, false))
		for _, h := range data {
			if dr != nil && !slices.ContainsFunc(dr, func(r string) bool { return !slices.Contains(h.readers, r) }) {
				continue
			}
			m.audit(ctx, tool, "denied", "", h.ids)
			who := "anyone"
			if dr != nil {
				who = "only " + strings.Join(dr, ", ")
			}
			return fault.New(fault.Denied, "provenance: %s stores %s, which may go only to %s, into %s, which %s may read",
				tool, h.what, strings.Join(h.readers, ", "), m.shown(d), who)
		}
	}
	return nil
}

// shown names p without a file's own path (a denial is shown to the
// model): a file or directory by the configured directory or the root
// holding it.
func (m *monitor) shown(p place) string {
	if p.kind != "root" {
		return p.String()
	}
	if c := m.classOf(p.name); c != "" {
		return "root:" + c
	}
	for _, r := range m.sess.Capabilities().AllRoots() {
		if within(r, p.name) {
			return "root:" + r
		}
	}
	return "a place a symbolic link on the path leads to"
}

// classOf is the most specific configured directory holding abs, or ""
// for none.
func (m *monitor) classOf(abs string) string {
	best := ""
	consider := func(p string) {
		if dir, ok := strings.CutPrefix(p, "root:"); ok && within(filepath.Clean(dir), abs) && len(dir) > len(best) {
			best = filepath.Clean(dir)
		}
	}
	for _, p := range m.p.Trusted {
		consider(p)
	}
	for p := range m.p.Readers {
		consider(p)
	}
	return best
}

// hasRootPatterns reports whether a Trusted or Readers pattern names a
// directory: only then can a symbolic link change a read's label.
func hasRootPatterns(p *Provenance) bool {
	for _, t := range p.Trusted {
		if strings.HasPrefix(t, "root:") {
			return true
		}
	}
	for t := range p.Readers {
		if strings.HasPrefix(t, "root:") {
			return true
		}
	}
	return false
}
