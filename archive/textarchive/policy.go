package textarchive

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/fetch"
)

// The retention of a source policy.
const (
	// RetainTextOnly keeps the text taken from a fetched body, not the
	// body.
	RetainTextOnly = "text_only"
	// RetainOriginal keeps the body too, as a blob: the text can then be
	// taken from it again (Rebuild).
	RetainOriginal = "original"
)

// SourcePolicy is a reviewed, approved source of retained fetches:
// which group of the budget it charges, which hosts it may reach, what
// the archive keeps, and the network and budget bounds, each defaulting
// to the limits.ArchiveFetch* values when absent. It composes net/fetch's
// policy (the destination guard and the bounds of one fetch) and
// net/budget's (the group's window): both are built from it and checked
// by their own packages.
type SourcePolicy struct {
	Format    int      `json:"format"`
	Group     string   `json:"group"`
	Hosts     []string `json:"hosts"`
	Retention string   `json:"retention"`

	MaxResponseBytes   int64 `json:"max_response_bytes,omitzero"`
	MaxRequests        int   `json:"max_requests,omitzero"`
	MaxRedirects       int   `json:"max_redirects,omitzero"`
	DeadlineSeconds    int   `json:"deadline_seconds,omitzero"`
	WindowSeconds      int64 `json:"window_seconds,omitzero"`
	WindowRequests     int64 `json:"window_requests,omitzero"`
	WindowBytes        int64 `json:"window_bytes,omitzero"`
	MinIntervalSeconds int64 `json:"min_interval_seconds,omitzero"`

	// The reviewed exceptions of an HTTP policy (net/fetch.Policy).
	Ports               []int    `json:"ports,omitempty"`
	PrivateDestinations []string `json:"private_destinations,omitempty"`
	CAFile              string   `json:"ca_file,omitempty"`

	fetch  *fetch.Policy
	budget *budget.Policy
	digest string
}

// ParseSourcePolicy reads a source policy strictly (unknown members,
// duplicate names and values of the wrong type refused with their
// position) and checks it by building its fetch and budget policies. A
// ca_file is relative to dir; an empty dir refuses one.
func ParseSourcePolicy(ctx context.Context, data []byte, dir string) (*SourcePolicy, error) {
	if len(data) > limits.PolicyFileMaxBytes {
		return nil, fault.LimitExceeded("source policy bytes", limits.PolicyFileMaxBytes, int64(len(data)))
	}
	var p SourcePolicy
	if err := strictJSON(data, &p, "source policy"); err != nil {
		return nil, err
	}
	if err := p.check(ctx, dir); err != nil {
		return nil, err
	}
	p.digest = sha256Hex(data)
	return &p, nil
}

// LoadSourcePolicy reads the source policy file at the host path path
// (a host target: a regular file, its last element never a symbolic
// link, a FIFO never waited on).
func LoadSourcePolicy(ctx context.Context, path string) (*SourcePolicy, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "source policy: bad path")
	}
	t, err := scope.Host(abs)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	data, err := t.ReadAll(ctx, limits.PolicyFileMaxBytes, "source policy")
	if err != nil {
		return nil, err
	}
	return ParseSourcePolicy(ctx, data, filepath.Dir(abs))
}

func orDefault[T int | int64](v *T, d T) {
	if *v == 0 {
		*v = d
	}
}

func (p *SourcePolicy) check(ctx context.Context, dir string) error {
	switch {
	case p.Format != 1:
		return fault.New(fault.InvalidInput, "source policy: \"format\" must be 1")
	case p.Group == "":
		return fault.New(fault.InvalidInput, "source policy: \"group\" is required: the budget group its fetches charge")
	case len(p.Hosts) == 0:
		return fault.New(fault.InvalidInput, "source policy: \"hosts\" is required: the reviewed host names it may reach")
	case p.Retention != RetainTextOnly && p.Retention != RetainOriginal:
		return fault.New(fault.InvalidInput, "source policy: \"retention\" must be %q or %q", RetainTextOnly, RetainOriginal)
	}
	orDefault(&p.MaxResponseBytes, limits.ArchiveFetchResponseBytes)
	orDefault(&p.MaxRequests, limits.ArchiveFetchRequests)
	orDefault(&p.MaxRedirects, limits.ArchiveFetchRedirects)
	orDefault(&p.DeadlineSeconds, int(limits.ArchiveFetchDeadline/time.Second))
	orDefault(&p.WindowSeconds, int64(limits.ArchiveFetchWindow/time.Second))
	orDefault(&p.WindowRequests, limits.ArchiveFetchWindowRequests)
	orDefault(&p.WindowBytes, limits.ArchiveFetchWindowBytes)
	if p.MaxResponseBytes > limits.ArchiveMaxFileBytes {
		return fault.LimitExceeded("source policy: max_response_bytes", limits.ArchiveMaxFileBytes, p.MaxResponseBytes)
	}
	fp, err := json.Marshal(map[string]any{
		"format": 1, "max_response_bytes": p.MaxResponseBytes, "max_expanded_bytes": p.MaxResponseBytes,
		"max_requests": p.MaxRequests, "max_redirects": p.MaxRedirects, "deadline_seconds": p.DeadlineSeconds,
		"hosts": p.Hosts, "ports": p.Ports, "private_destinations": p.PrivateDestinations, "ca_file": p.CAFile,
	})
	if err != nil {
		return fault.Wrap(fault.Internal, err, "source policy: encoding its fetch policy failed")
	}
	if p.fetch, err = fetch.ParsePolicy(ctx, fp, dir); err != nil {
		return fault.New(fault.CodeOf(err), "source policy: %s", fault.As(err).Message)
	}
	bp, err := json.Marshal(map[string]any{
		"format": 1, "group": p.Group, "window_seconds": p.WindowSeconds, "window_requests": p.WindowRequests,
		"window_bytes": p.WindowBytes, "min_interval_seconds": p.MinIntervalSeconds,
	})
	if err != nil {
		return fault.Wrap(fault.Internal, err, "source policy: encoding its budget policy failed")
	}
	if p.budget, err = budget.ParsePolicy(ctx, bp); err != nil {
		return fault.New(fault.CodeOf(err), "source policy: %s", fault.As(err).Message)
	}
	return nil
}

// Budget is the budget policy the source's fetches are admitted under:
// open the group's root or store with it (budget.Open).
func (p *SourcePolicy) Budget() *budget.Policy { c := *p.budget; return &c }

// Digest is the SHA-256 of the policy file as read, recorded with each
// fetch.
func (p *SourcePolicy) Digest() string { return p.digest }
