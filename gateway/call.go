package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Outcome is an upstream tool's answer, as capkit passes it on.
type Outcome struct {
	// Text is the answer's text blocks joined by newlines.
	Text string
	// Structured is its structured content, checked against the tool's
	// output schema; nil for none.
	Structured json.RawMessage
	// Content is its content blocks as MCP encodes them, when it is more
	// than one text block; nil when Text says it all.
	Content []json.RawMessage
}

// Call calls t for k with args (a JSON object the kernel validated
// against the approved input schema). maxOutput bounds the text of a
// failure the upstream reports (its results are bounded by the kernel);
// progress, when set, receives the upstream's progress reports, bounded
// in rate. ctx's end reaches the upstream (notifications/cancelled).
func (g *Gateway) Call(ctx context.Context, k Key, t *Tool, args json.RawMessage, maxOutput int64, progress func(progress, total float64, message string)) (*Outcome, error) {
	c := t.up.conn(t.up.keyOf(k))
	if c == nil {
		return nil, errClosed(t.Upstream)
	}
	lv, err := c.session(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := c.status(t); err != nil {
		return nil, err
	}
	var tok string
	if progress != nil {
		var stop func()
		tok, stop = c.addRelay(progress)
		defer stop()
	}
	if lv.link.pipe == nil {
		params := &mcp.CallToolParams{Name: t.Name, Arguments: args}
		if tok != "" {
			params.SetProgressToken(tok)
		}
		res, err := lv.cs.CallTool(ctx, params)
		if err != nil {
			return nil, c.callFault(ctx, lv, t, err)
		}
		c.answered()
		return t.outcome(res, maxOutput)
	}
	raw, err := lv.link.pipe.call(ctx, t.Name, args, tok)
	if err != nil {
		return nil, c.callFault(ctx, lv, t, err)
	}
	if p, ok := readPlain(raw); ok {
		c.answered()
		return t.plainOutcome(p, maxOutput)
	}
	// What the SDK's CallTool does with the result.
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fault.Wrap(fault.Integrity, err, "tool %s: upstream %s sent an answer that is not a tools/call result", t.Public, c.up.Name)
	}
	c.answered()
	return t.outcome(&res, maxOutput)
}

// plainResult is the result most calls get: one text block, perhaps
// marked as a failure.
type plainResult struct {
	Content    [1]plainBlock  `json:"content"` // another length is refused
	IsError    bool           `json:"isError"`
	Structured jsontext.Value `json:"structuredContent"`
}

type plainBlock struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

// readPlain reads a result of one text block and no structured content
// in one pass; ok is false for any other result, and for any the SDK
// might read otherwise (a member it may not know, one given twice, text
// that is not valid UTF-8), which the SDK then decodes
// (TestPlainResultMatchesSDK).
func readPlain(raw []byte) (p plainResult, ok bool) {
	if jsonv2.Unmarshal(raw, &p, jsonv2.RejectUnknownMembers(true)) != nil {
		return p, false
	}
	ok = p.Content[0].Type == "text" && p.Content[0].Text != nil &&
		(p.Structured == nil || string(p.Structured) == "null")
	return p, ok
}

// plainOutcome is outcome for a plain result.
func (t *Tool) plainOutcome(p plainResult, maxOutput int64) (*Outcome, error) {
	text := *p.Content[0].Text
	if p.IsError {
		return nil, t.failure(text, 0, maxOutput)
	}
	if err := t.checkOutput(nil); err != nil {
		return nil, err
	}
	return &Outcome{Text: text}, nil
}

// callFault classifies a call that got no result: the caller's end
// (passed on as it is: the kernel says limit or canceled), a message
// past the bound (limit), the upstream ending (unavailable: it is
// started again on the next call), a protocol error or a result that is
// not one (integrity).
func (c *conn) callFault(ctx context.Context, lv *live, t *Tool, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var werr *jsonrpc.Error
	var ferr *fault.Error
	switch {
	case errors.As(err, &ferr):
		return err
	case lv.link.tooBig.Load() && waitEnded(lv):
		return fault.New(fault.Limit, "tool %s: upstream %s sent a message of more than %s; it was stopped, and is started again on the next call", t.Public, c.up.Name, limits.Bytes(limits.UpstreamMaxMessageBytes))
	case errors.As(err, &werr):
		return fault.New(fault.Integrity, "tool %s: upstream %s answered with a protocol error (%d: %s)", t.Public, c.up.Name, werr.Code, untrusted(werr.Message))
	case errors.Is(err, mcp.ErrConnectionClosed) && waitEnded(lv) || ended(lv):
		return fault.Wrap(fault.Unavailable, err, "tool %s: upstream %s ended during the call; it is started again on the next call", t.Public, c.up.Name).RetryIn(backoff(1))
	}
	return fault.Wrap(fault.Integrity, err, "tool %s: upstream %s sent an answer that is not a tools/call result", t.Public, c.up.Name)
}

// waitEnded waits for lv's end to be recorded (the connection is closed;
// the session's end follows), so that the next call starts another.
func waitEnded(lv *live) bool {
	select {
	case <-lv.done:
	case <-time.After(limits.UpstreamStopGrace):
	}
	return true
}

// ended reports whether lv's session has ended, waiting a moment: a
// call's failure may come before the session's end is seen.
func ended(lv *live) bool {
	select {
	case <-lv.done:
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// outcome checks an upstream's result and renders it: its failure as
// fault.Upstream, its structured content against the output schema, its
// blocks encoded for passing on.
func (t *Tool) outcome(res *mcp.CallToolResult, maxOutput int64) (*Outcome, error) {
	var texts []string
	others := 0
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		} else {
			others++
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		return nil, t.failure(text, others, maxOutput)
	}
	out := &Outcome{Text: text}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fault.Wrap(fault.Integrity, err, "tool %s: upstream %s sent structured content that cannot be encoded", t.Public, t.Upstream)
		}
		out.Structured = b
	}
	if err := t.checkOutput(out.Structured); err != nil {
		return nil, err
	}
	if len(res.Content) == 1 && others == 0 {
		return out, nil
	}
	out.Content = make([]json.RawMessage, 0, len(res.Content))
	for _, c := range res.Content {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, fault.Wrap(fault.Integrity, err, "tool %s: upstream %s sent a content block that cannot be encoded", t.Public, t.Upstream)
		}
		out.Content = append(out.Content, b)
	}
	return out, nil
}

// failure is an upstream's isError result: its text, bounded, and how
// many blocks that are not text it had besides.
func (t *Tool) failure(text string, others int, maxOutput int64) error {
	msg := clipText(text, min(maxOutput, limits.UpstreamMaxFailureBytes))
	if others > 0 {
		msg += fmt.Sprintf(" (and %d content blocks that are not text)", others)
	}
	return fault.New(fault.Upstream, "tool %s: upstream %s reported a failure: %s", t.Public, t.Upstream, msg)
}

// checkOutput refuses a result that does not meet the tool's own
// declared output schema (the approved one): structured content it does
// not describe, or none at all where it declares one.
func (t *Tool) checkOutput(structured json.RawMessage) error {
	if t.Definition.OutputSchema == nil {
		return nil
	}
	rs, err := t.outSchema()
	if err != nil {
		return fault.Wrap(fault.Integrity, err, "tool %s: upstream %s declares an output schema capkit cannot check results against", t.Public, t.Upstream)
	}
	if structured == nil {
		return fault.New(fault.Integrity, "tool %s: upstream %s declares an output schema but sent no structured content", t.Public, t.Upstream)
	}
	var v any
	if err := json.Unmarshal(structured, &v); err != nil {
		return fault.Wrap(fault.Integrity, err, "tool %s: upstream %s sent structured content that is not JSON", t.Public, t.Upstream)
	}
	if err := rs.r.Validate(v); err != nil {
		return fault.New(fault.Integrity, "tool %s: upstream %s sent a result that does not match its own output schema: %s", t.Public, t.Upstream, clipText(err.Error(), 400))
	}
	return nil
}

// resolvedSchema is an output schema ready to validate with.
type resolvedSchema struct{ r *jsonschema.Resolved }

func resolveSchema(v json.RawMessage) (*resolvedSchema, error) {
	if v == nil {
		return nil, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &resolvedSchema{r}, nil
}

// clipText cuts s to at most max bytes at a character boundary, saying
// how much was left out.
func clipText(s string, max int64) string {
	if int64(len(s)) <= max {
		return s
	}
	cut := int(max)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(" [... %d bytes more]", len(s)-cut)
}
