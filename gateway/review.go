package gateway

import (
	"context"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// ToolState is how a tool an upstream lists stands against the lock.
type ToolState string

const (
	// StateApproved: listed with the definition the lock holds.
	StateApproved ToolState = "approved"
	// StateNew: listed, not in the lock.
	StateNew ToolState = "new"
	// StateChanged: listed with a definition other than the lock's.
	StateChanged ToolState = "changed"
	// StateMissing: in the lock, not listed.
	StateMissing ToolState = "missing"
	// StateNotAllowed: listed, but the upstream's tools = [...] leaves
	// it out.
	StateNotAllowed ToolState = "not allowed"
	// StateUnusable: listed with a name or a definition capkit cannot
	// offer.
	StateUnusable ToolState = "unusable"
)

// Review is one upstream's listing against the lock.
type Review struct {
	Upstream string
	// Err is why the upstream could not be started or listed; Tools is
	// then empty.
	Err   error
	Tools []ToolReview
}

// ToolReview is one tool of a Review.
type ToolReview struct {
	// Name is the upstream's name of the tool (untrusted text); Public
	// the name it is offered as (empty when Unusable for its name).
	Name, Public string
	State        ToolState
	// Changes names the parts that changed (Changed); Diff shows them
	// (Changed, and New: the definition whole).
	Changes []string
	Diff    string
	// Listed is the definition listed now (nil when Missing or
	// Unusable); Problem why an Unusable one cannot be offered.
	Listed  *Definition
	Problem string
}

// Pending reports whether the review holds anything to approve or look
// at: a new, changed, missing or unusable tool, or an upstream that could
// not be listed.
func Pending(reviews []Review) bool {
	for _, r := range reviews {
		if r.Err != nil {
			return true
		}
		for _, t := range r.Tools {
			if t.State != StateApproved && t.State != StateNotAllowed {
				return true
			}
		}
	}
	return false
}

// ReviewUpstreams starts each upstream once, lists its tools and compares
// them with lock. An upstream that cannot be started or listed has its
// Err set; the others are still reviewed.
func ReviewUpstreams(ctx context.Context, upstreams []Upstream, lock *Lock, opts *Options) ([]Review, error) {
	g, err := New(upstreams, &Lock{}, opts)
	if err != nil {
		return nil, err
	}
	var out []Review
	for _, name := range g.Upstreams() {
		u := g.ups[name]
		r := Review{Upstream: name}
		listed, err := g.probe(ctx, &u.Upstream)
		if err != nil {
			r.Err = err
		} else {
			r.Tools = reviewTools(u, listed, lock)
		}
		out = append(out, r)
	}
	return out, nil
}

// probe starts u, lists its tools and stops it.
func (g *Gateway) probe(ctx context.Context, u *Upstream) (map[string]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, limits.UpstreamStartTimeout)
	defer cancel()
	l, err := g.open(ctx, u)
	if err != nil {
		return nil, err
	}
	defer l.stop()
	cs, err := mcp.NewClient(clientImpl, nil).Connect(ctx, l.transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, g.probeFault(u, l, err)
	}
	defer cs.Close()
	listed, err := listedDefinitions(ctx, cs)
	if err != nil {
		return nil, g.probeFault(u, l, err)
	}
	return listed, nil
}

func (g *Gateway) probeFault(u *Upstream, l *link, err error) error {
	if l.tooBig.Load() {
		return fault.New(fault.Limit, "upstream %s sent a message of more than %s", u.Name, limits.Bytes(limits.UpstreamMaxMessageBytes))
	}
	l.stop()
	if how := l.ended(); how != "" {
		return fault.Wrap(fault.Unavailable, err, "upstream %s did not answer its listing (%s)", u.Name, how)
	}
	return fault.Wrap(fault.Unavailable, err, "upstream %s did not answer its listing", u.Name)
}

// reviewTools compares a listing with the lock, in name order.
func reviewTools(u *upstream, listed map[string]*mcp.Tool, lock *Lock) []ToolReview {
	var out []ToolReview
	for _, name := range sortedKeys(listed) {
		tr := ToolReview{Name: name}
		public, err := PublicName(u.Name, name)
		if err != nil {
			tr.State, tr.Problem = StateUnusable, fault.As(err).Message
			out = append(out, tr)
			continue
		}
		tr.Public = public
		d, err := definitionOf(listed[name])
		if err != nil {
			tr.State, tr.Problem = StateUnusable, err.Error()
			out = append(out, tr)
			continue
		}
		tr.Listed = d
		was, approved := lock.Approved(u.Name, name)
		switch {
		case !u.allows(name):
			tr.State = StateNotAllowed
		case !approved:
			tr.State, tr.Diff = StateNew, d.Diff(nil)
		case d.Digest() != was.Digest():
			tr.State, tr.Changes, tr.Diff = StateChanged, d.Changes(was), d.Diff(was)
		default:
			tr.State = StateApproved
		}
		out = append(out, tr)
	}
	for _, name := range lock.Tools(u.Name) {
		if listed[name] == nil {
			public, _ := PublicName(u.Name, name)
			out = append(out, ToolReview{Name: name, Public: public, State: StateMissing})
		}
	}
	return out
}

// Approve records in lock what reviews list for the selected upstreams
// (NAME: every tool of it) and tools (NAME__TOOL); none selects every
// upstream. New and changed tools are approved as listed, missing ones
// leave the lock; approved, not-allowed and unusable ones are left as
// they are. It returns what it changed, one line each, and fails
// changing nothing when a selector names nothing reviewed, or names an
// unusable tool or an upstream that could not be listed.
func Approve(lock *Lock, reviews []Review, selectors []string) ([]string, error) {
	chosen := func(r Review, t *ToolReview) bool {
		if len(selectors) == 0 || slices.Contains(selectors, r.Upstream) {
			return true
		}
		return t != nil && t.Public != "" && slices.Contains(selectors, t.Public)
	}
	for _, s := range selectors {
		if !slices.ContainsFunc(reviews, func(r Review) bool {
			return r.Upstream == s || slices.ContainsFunc(r.Tools, func(t ToolReview) bool { return t.Public == s })
		}) {
			return nil, fault.New(fault.NotFound, "%q names no reviewed upstream and no tool one lists (NAME or NAME__TOOL)", clip.Text(s))
		}
	}
	for _, r := range reviews {
		if r.Err != nil && (len(selectors) == 0 || slices.Contains(selectors, r.Upstream)) {
			return nil, fault.Wrap(fault.CodeOf(r.Err), r.Err, "upstream %s could not be listed, so nothing of it can be approved", r.Upstream)
		}
		for _, t := range r.Tools {
			if t.State == StateUnusable && t.Public != "" && slices.Contains(selectors, t.Public) {
				return nil, fault.New(fault.InvalidInput, "tool %s of upstream %s cannot be offered: %s", untrusted(t.Name), r.Upstream, t.Problem)
			}
		}
	}
	var done []string
	for _, r := range reviews {
		for i := range r.Tools {
			t := &r.Tools[i]
			if !chosen(r, t) {
				continue
			}
			switch t.State {
			case StateNew, StateChanged:
				lock.Set(r.Upstream, t.Listed)
				done = append(done, string(t.State)+" "+t.Public+" approved")
			case StateMissing:
				lock.Remove(r.Upstream, t.Name)
				done = append(done, "missing "+t.Public+" removed from the lock")
			}
		}
	}
	return done, nil
}

// Summary is a tool's description cut for tool_search: its first line,
// at most limits.UpstreamSummaryBytes.
func (t *Tool) Summary() string {
	d := t.Definition.Description
	if i := strings.IndexByte(d, '\n'); i >= 0 {
		d = d[:i]
	}
	return clipText(strings.TrimSpace(d), limits.UpstreamSummaryBytes)
}
