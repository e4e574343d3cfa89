package script

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	pathscope "github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

// callRequest is one tool.call as the host side receives it.
type callRequest struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// Prov is what the call's arguments depend on; nil without labels.
	Prov *callLabels `json:"prov,omitempty"`
}

// callLabels are the labels of one call, as source ids.
type callLabels struct {
	// Args are the labels of the argument dict's members, by name (the
	// dict's own label joined in); Whole that of an argument that is not
	// a dict (a string filling the tool's one required field).
	Args  map[string][]int32 `json:"args,omitempty"`
	Whole []int32            `json:"whole,omitempty"`
	// Control is what the call being made at all depends on: the
	// branches and loops around it, the floor, the tool's name.
	Control []int32 `json:"control,omitempty"`
	// Under says which regions made Control what it is.
	Under []string `json:"under,omitempty"`
	// At is the script position of the call.
	At string `json:"at,omitempty"`
}

// callReply is a call's result and, with labels, its source.
type callReply struct {
	Result *kernel.Result
	// Source labels the result (-1: a trusted, public source, no label);
	// NewSources are the sources named since the last reply, in id order.
	Source     int32
	NewSources []sourceInfo
}

// declassifyRequest is one prov.declassify.
type declassifyRequest struct {
	Value   json.RawMessage `json:"value"`
	Sources []int32         `json:"sources"`
	Reason  string          `json:"reason"`
	At      string          `json:"at"`
}

// host is how an execution reaches the session: in process directly, from
// a worker over its pipe.
type host interface {
	call(ctx context.Context, req *callRequest) (*callReply, error)
	declassify(ctx context.Context, req *declassifyRequest) error
}

// monitor is the host side of a run: it makes each call in the session,
// deciding an effectful one by its policy first, names the sources of
// results, and audits its decisions. It never sees the script; what it
// decides from are the labels the interpreter reports.
type monitor struct {
	sess  *kernel.Session
	p     *Provenance
	srcs  []sourceRec
	byKey map[sourceKey]int32
	sent  int // sources already described to the interpreter
	// linked: a root pattern is configured, so where a path's symbolic
	// links lead can change its read's label.
	linked bool
}

// sourceKey names a source: a tool's results from one resource (and
// the place a link on its path leads to, when that is another).
type sourceKey struct {
	tool   string
	r, via resource
}

// sourceRec is one source: a tool's results from one resource.
type sourceRec struct {
	info     sourceInfo
	tool     string
	kind     string
	readers  []string // nil: anyone
	labelled bool     // untrusted, or readers restricted
	firstAt  string
	from     []int32 // what the first call's arguments depended on
}

func newMonitor(sess *kernel.Session, p *Provenance) *monitor {
	if p == nil {
		p = &Provenance{}
	}
	return &monitor{sess: sess, p: p, byKey: map[sourceKey]int32{}, linked: hasRootPatterns(p)}
}

func (m *monitor) call(ctx context.Context, req *callRequest) (*callReply, error) {
	entry, args := prepareCall(m.sess, req.Name, req.Args)
	if entry != nil && entry.Effect == capability.RunScript {
		return nil, fault.New(fault.Denied, "a script cannot call %s", req.Name)
	}
	if req.Prov != nil && entry != nil && !m.p.readsOnly(entry.Name, entry.Effect) {
		if err := m.decide(ctx, entry, args, req.Prov); err != nil {
			return nil, err
		}
	}
	res, err := m.sess.Call(ctx, req.Name, args)
	if err != nil {
		return nil, err
	}
	reply := &callReply{Result: res, Source: -1}
	if req.Prov != nil && entry != nil {
		reply.Source = m.sourceOf(entry, args, req.Prov)
		reply.NewSources = m.unsent()
	}
	return reply, nil
}

// decide applies entry's policy to a call of it.
func (m *monitor) decide(ctx context.Context, entry *catalog.Entry, args json.RawMessage, lb *callLabels) error {
	members := argMembers(args, lb)
	control := lb.Control
	if len(members) == 0 && m.untrusted(control) {
		return m.deny(ctx, entry.Name, "", control, nil, lb, Rule{})
	}
	if err := m.checkStores(ctx, entry, args, members, lb); err != nil {
		return err
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := members[name]
		rule := m.p.rule(entry.Name, name)
		if !rule.Any && (m.untrusted(value) || m.untrusted(control)) {
			return m.deny(ctx, entry.Name, name, control, value, lb, rule)
		}
		if rule.Readers != "" {
			if err := m.checkReaders(ctx, entry.Name, name, rule, args, append(slices.Clone(value), control...)); err != nil {
				return err
			}
		}
	}
	m.audit(ctx, entry.Name, "allowed", "", nil)
	return nil
}

// argMembers are the members of the call's arguments with the labels the
// interpreter gave them: each its own for a dict, the whole argument's
// for a string that filled the tool's one field.
func argMembers(args json.RawMessage, lb *callLabels) map[string][]int32 {
	var obj map[string]jsontext.Value
	if json.Unmarshal(args, &obj) != nil {
		return nil
	}
	out := make(map[string][]int32, len(obj))
	for k := range obj {
		if lb.Args == nil {
			out[k] = lb.Whole
		} else {
			out[k] = lb.Args[k]
		}
	}
	return out
}

// checkReaders refuses data going where one of its sources may not go,
// and data whose readers are restricted when the argument that says
// where it goes does not name destinations it can read.
func (m *monitor) checkReaders(ctx context.Context, tool, arg string, rule Rule, args json.RawMessage, l []int32) error {
	var obj map[string]jsontext.Value
	_ = json.Unmarshal(args, &obj)
	dests, readable := destinations(obj[rule.Readers])
	for _, id := range l {
		s := &m.srcs[id]
		if s.readers == nil {
			continue
		}
		if !readable {
			m.audit(ctx, tool, "denied", arg, []int32{id})
			return fault.New(fault.Denied, "provenance: %s's argument %q holds data of %s, which may go only to %s, and argument %q does not name where it goes (a string or a list of strings; policy: %s = %s)",
				tool, arg, s.info.Name, strings.Join(s.readers, ", "), rule.Readers, arg, rule)
		}
		for _, d := range dests {
			if !slices.Contains(s.readers, d) {
				m.audit(ctx, tool, "denied", arg, []int32{id})
				return fault.New(fault.Denied, "provenance: %s's argument %q holds data of %s, which may not go to %q (its readers: %s; policy: %s = %s)",
					tool, arg, s.info.Name, clip.Text(d), strings.Join(s.readers, ", "), arg, rule)
			}
		}
	}
	return nil
}

// destinations are where a readers argument says data goes: false when
// it is missing, or is not a string or a list of strings.
func destinations(raw jsontext.Value) ([]string, bool) {
	var ss []string
	switch {
	case raw == nil:
		return nil, false
	case raw.Kind() == '"':
		ss = []string{""}
		if json.Unmarshal(raw, &ss[0]) != nil {
			return nil, false
		}
	case raw.Kind() != '[' || json.Unmarshal(raw, &ss) != nil:
		return nil, false
	}
	for i, s := range ss {
		ss[i] = destination(s)
	}
	return ss, true
}

// deny refuses a call, saying which argument, which sources and through
// which calls and control.
func (m *monitor) deny(ctx context.Context, tool, arg string, control, value []int32, lb *callLabels, rule Rule) error {
	var why []string
	if m.untrusted(value) {
		why = append(why, "depends on untrusted data: "+m.explain(value))
	}
	if m.untrusted(control) {
		under := strings.Join(lb.Under, "; ")
		if under == "" {
			under = "the tool's name"
		}
		why = append(why, fmt.Sprintf("is made under control that depends on untrusted data (%s): %s", under, m.explain(control)))
	}
	m.audit(ctx, tool, "denied", arg, append(slices.Clone(value), control...))
	if arg == "" {
		return fault.New(fault.Denied, "provenance: the call of %s %s", tool, strings.Join(why, ", and it "))
	}
	subject := fmt.Sprintf("%s's argument %q", tool, arg)
	if !m.untrusted(value) {
		subject = fmt.Sprintf("the call of %s (argument %q)", tool, arg)
	}
	return fault.New(fault.Denied, "provenance: %s %s; the policy is %s = %s (capkit.toml: [tool.%s.provenance])",
		subject, strings.Join(why, ", and it "), arg, rule, tool)
}

// explain names l's untrusted sources, where each was first read, and the
// calls whose results decided that read's arguments.
func (m *monitor) explain(l []int32) string {
	var parts []string
	for _, id := range l {
		if !m.srcs[id].info.Trusted && len(parts) < limits.ScriptProvenanceExplainItems {
			parts = append(parts, m.chain(id, 0))
		}
	}
	return strings.Join(parts, "; ")
}

func (m *monitor) chain(id int32, depth int) string {
	s := &m.srcs[id]
	out := s.info.Name
	if s.firstAt != "" {
		out += " at " + s.firstAt
	}
	if depth >= limits.ScriptProvenanceExplainDepth {
		return out
	}
	var via []string
	for _, f := range s.from {
		if f != id && !m.srcs[f].info.Trusted && len(via) < limits.ScriptProvenanceExplainItems {
			via = append(via, m.chain(f, depth+1))
		}
	}
	if len(via) > 0 {
		out += " (called with data from " + strings.Join(via, ", ") + ")"
	}
	return out
}

func (m *monitor) untrusted(l []int32) bool {
	for _, id := range l {
		if int(id) >= len(m.srcs) || !m.srcs[id].info.Trusted {
			return true
		}
	}
	return false
}

// audit records a decision: the tool, the argument refused, and the
// sources as tool and kind, never a value.
func (m *monitor) audit(ctx context.Context, tool, decision, arg string, l []int32) {
	if m.p.Audit == nil {
		return
	}
	var kinds []string
	for _, id := range l {
		if int(id) < len(m.srcs) {
			k := m.srcs[id].tool + "(" + m.srcs[id].kind + ")"
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	attrs := []slog.Attr{slog.String("tool", tool), slog.String("decision", decision)}
	if arg != "" {
		attrs = append(attrs, slog.String("argument", arg))
	}
	if len(kinds) > 0 {
		attrs = append(attrs, slog.Any("sources", kinds))
	}
	m.p.Audit.LogAttrs(ctx, slog.LevelInfo, "provenance", attrs...)
}

// pathArgs are the argument names that name a file or directory in a
// root, in the order their root names a result's source.
var pathArgs = []string{"path", "dir", "index", "archive", "source", "cwd", "root", "file"}

// sourceOf is the source of a call's result: the tool and the resource
// (an upstream, a catalog, a URL's host, the root, or, most specifically,
// the configured directory a path lies in). It returns -1 for a source
// whose data is trusted and may go anywhere, and for a tool that only
// parses what it is given.
func (m *monitor) sourceOf(entry *catalog.Entry, args json.RawMessage, lb *callLabels) int32 {
	r, via, ok := m.resourceOf(entry, args)
	if !ok {
		return -1
	}
	key := sourceKey{entry.Name, r, via}
	if id, ok := m.byKey[key]; ok {
		if m.srcs[id].labelled {
			return id
		}
		return -1
	}
	trusted := m.trustedRead(entry.Name, r) && (via.kind == "" || m.trustedRead(entry.Name, via))
	var readers []string
	for p, rs := range m.p.Readers {
		if matches(p, entry.Name, r) || via.kind != "" && matches(p, entry.Name, via) {
			if readers == nil {
				readers = slices.Clone(rs)
			} else {
				readers = slices.DeleteFunc(readers, func(d string) bool { return !slices.Contains(rs, d) })
			}
		}
	}
	name := entry.Name
	if r.kind != "tool" {
		name += "(" + r.String() + ")"
	}
	if via.kind != "" {
		name += "(through a link to " + via.String() + ")"
	}
	from := slices.Clone(lb.Control)
	for _, l := range lb.Args {
		from = append(from, l...)
	}
	from = append(from, lb.Whole...)
	slices.Sort(from)
	id := int32(len(m.srcs))
	m.srcs = append(m.srcs, sourceRec{
		info: sourceInfo{Name: name, Trusted: trusted}, tool: entry.Name, kind: r.kind,
		readers: readers, labelled: !trusted || readers != nil, firstAt: lb.At, from: slices.Compact(from),
	})
	m.byKey[key] = id
	if !m.srcs[id].labelled {
		return -1
	}
	return id
}

// trustedRead reports whether a Trusted pattern names tool's results
// from r.
func (m *monitor) trustedRead(tool string, r resource) bool {
	for _, p := range m.p.Trusted {
		if matches(p, tool, r) {
			return true
		}
	}
	return false
}

// resourceOf is where entry's result comes from, and, when a symbolic
// link on a file's path leads into another configured directory (or out
// of them), the class it leads to (via); false for a parser given its
// input (its result depends on its arguments alone).
func (m *monitor) resourceOf(entry *catalog.Entry, args json.RawMessage) (r, via resource, ok bool) {
	if up, ok := entry.Effect.Upstream(); ok {
		return resource{"upstream", up}, via, true
	}
	if entry.Effect == capability.CatalogRead {
		return resource{"catalog", entry.Name}, via, true
	}
	obj := resourceArgs(args)
	str := func(k string) (string, bool) {
		if obj[k] == nil {
			return "", false
		}
		var s string
		return s, json.Unmarshal(obj[k], &s) == nil && s != ""
	}
	if entry.Effect == capability.NetFetch {
		if u, ok := str("url"); ok {
			return resource{"host", destination(u)}, via, true
		}
	}
	roots := m.sess.Capabilities().Roots(entry.Effect)
	for _, k := range pathArgs {
		if p, ok := str(k); ok && len(roots) > 0 {
			if root, rel, err := pathscope.In(roots, capability.Protected{}).Lexical(p); err == nil {
				r = resource{"root", m.rootClass(root, rel)}
				if m.linked {
					if real := realPath(root, filepath.Join(root, rel)); real != filepath.Join(root, rel) {
						if c := m.classOf(real); c != r.name && (c != "" || m.classOf(r.name) != "") {
							via = resource{"root", cmp.Or(c, real)}
						}
					}
				}
				return r, via, true
			}
		}
	}
	if entry.Effect == capability.Parse {
		return resource{}, via, false
	}
	if len(roots) > 0 {
		return resource{"root", m.rootClass(roots[0], ".")}, via, true
	}
	return resource{"tool", entry.Name}, via, true
}

// resourceKeys are "url" and pathArgs as JSON strings, by the byte after
// the opening quote.
var resourceKeys = func() (out [256][][]byte) {
	for _, k := range append([]string{"url"}, pathArgs...) {
		out[k[0]] = append(out[k[0]], []byte(`"`+k+`"`))
	}
	return out
}()

// resourceArgs are the members of args that may say where a tool reads
// (a URL, a path): nil when args name none of them, which is decided
// without decoding when no key could be written escaped.
func resourceArgs(args json.RawMessage) map[string]jsontext.Value {
	if !mayNameResource(args) {
		return nil
	}
	var obj map[string]jsontext.Value
	_ = json.Unmarshal(args, &obj)
	return obj
}

// mayNameResource reports whether args hold a backslash or one of
// resourceKeys, in one pass: it is asked at every call.
func mayNameResource(args []byte) bool {
	for i, c := range args {
		switch {
		case c == '\\':
			return true
		case c == '"' && i+1 < len(args):
			for _, k := range resourceKeys[args[i+1]] {
				if bytes.HasPrefix(args[i:], k) {
					return true
				}
			}
		}
	}
	return false
}

// rootClass is the most specific configured directory holding root/rel,
// or root.
func (m *monitor) rootClass(root, rel string) string {
	abs := root
	if rel != "." && rel != "" {
		abs = root + "/" + rel
	}
	best := root
	consider := func(p string) {
		if dir, ok := strings.CutPrefix(p, "root:"); ok && within(dir, abs) && len(dir) > len(best) && within(root, dir) {
			best = dir
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

// unsent are the sources named since the last reply.
func (m *monitor) unsent() []sourceInfo {
	if m.sent == len(m.srcs) {
		return nil
	}
	out := make([]sourceInfo, 0, len(m.srcs)-m.sent)
	for _, s := range m.srcs[m.sent:] {
		out = append(out, s.info)
	}
	m.sent = len(m.srcs)
	return out
}

// declassify asks the host's hook.
func (m *monitor) declassify(ctx context.Context, req *declassifyRequest) error {
	var names []string
	for _, id := range req.Sources {
		if int(id) < len(m.srcs) {
			names = append(names, m.srcs[id].info.Name)
		}
	}
	if m.p.Declassify == nil {
		m.audit(ctx, "prov.declassify", "denied", "", req.Sources)
		return fault.New(fault.Denied, "provenance: prov.declassify at %s: the host declares no declassification", req.At)
	}
	ok, err := m.p.Declassify(ctx, Declassification{Value: req.Value, Sources: names, Reason: req.Reason, At: req.At})
	if err != nil {
		decision := "failed"
		if fault.CodeOf(err) == fault.Denied {
			decision = "denied"
		}
		m.audit(ctx, "prov.declassify", decision, "", req.Sources)
		return fault.New(fault.CodeOf(err), "provenance: prov.declassify at %s: data of %s stays untrusted: %s", req.At, strings.Join(names, ", "), fault.As(err).Message)
	}
	if !ok {
		m.audit(ctx, "prov.declassify", "denied", "", req.Sources)
		return fault.New(fault.Denied, "provenance: prov.declassify at %s: the host refused to trust data of %s", req.At, strings.Join(names, ", "))
	}
	m.audit(ctx, "prov.declassify", "declassified", "", req.Sources)
	return nil
}

// prepareCall is tool.call's argument as the session receives it: a JSON
// string fills the tool's single required string field when the session
// is granted a tool with such a schema; otherwise it goes as is (and the
// kernel refuses arguments that are not an object). It returns the
// tool's entry when the session is granted it. Scripts cannot start
// scripts.
func prepareCall(sess *kernel.Session, name string, args json.RawMessage) (*catalog.Entry, json.RawMessage) {
	e, _, ok := sess.Runtime().Catalog().Lookup(name)
	if !ok || !sess.Capabilities().Grants(e.Effect) {
		return nil, args
	}
	// A schema that does not resolve fails the call in the kernel.
	if in, _, err := e.Schemas(); err == nil && len(args) > 0 && args[0] == '"' {
		if field, ok := soleStringField(in.Required, in.Properties); ok {
			wrapped, _ := jsontext.AppendQuote([]byte("{"), field)
			wrapped = append(append(append(wrapped, ':'), args...), '}')
			args = wrapped
		}
	}
	return e, args
}
