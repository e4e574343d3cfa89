package hostloop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/kernel"
)

// Reply is the answer to one tool call, in the loop's format.
type Reply struct {
	// ID is the call's id as the provider gave it ("" for a Gemini call
	// without one); Name is the tool called.
	ID, Name string
	// Result is what the host sends back to the model: for Anthropic a
	// tool_result content block (in the next user message), for OpenAI
	// a tool message, for OpenAI Responses a function_call_output input
	// item, for Gemini a functionResponse part (in the next user turn).
	Result json.RawMessage
	// Extra, when set, carries the result's image where Result cannot:
	// for OpenAI a user message with the image, sent after the turn's
	// tool messages (a tool message holds text only); for Gemini an
	// inlineData part, in the same turn after the function responses.
	Extra json.RawMessage
	// Err is the failure Result reports to the model as "code: message";
	// nil when the call succeeded.
	Err *fault.Error
}

// call is a provider's tool call, as parsed.
type call struct {
	id, name string
	args     []byte // a JSON object, or nil when the call's arguments are not one
	argsErr  error  // why not
}

// ErrShape marks a call that is not the loop's format's tool call at all
// (not an object, no id or name, another type): there is nothing to
// answer, so Call returns it with no Reply.
var ErrShape = fault.NewMark("hostloop: not a tool call of this format")

// Call runs one tool call the model made, given in the loop's format: an
// Anthropic tool_use content block; an OpenAI tool_calls element (its
// arguments a JSON string); an OpenAI Responses function_call output item;
// a Gemini functionCall (or the part holding it). It returns the answer,
// a failure included (Reply.Err), to send back to the model. Call fails
// (invalid_input, ErrShape) only when call is not such a tool call; then
// nothing ran. Arguments that are not a JSON object and unknown tools are
// failed replies with invalid_input, and run nothing either.
func (l *Loop) Call(ctx context.Context, raw []byte) (*Reply, error) {
	c, err := parseCall(l.format, raw)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, ErrShape.With(err), "not %s", l.format.callName())
	}
	r := &Reply{ID: c.id, Name: c.name}
	if c.argsErr != nil {
		r.Err = fault.New(fault.InvalidInput, "tool %s: the arguments %s", clip.Text(c.name), c.argsErr.Error())
		return l.reply(r, nil)
	}
	args, err := l.argsFor(ctx, c)
	if err != nil {
		r.Err = fault.New(fault.InvalidInput, "tool %s: the arguments are not valid JSON: %s", clip.Text(c.name), err.Error())
		if ctx.Err() != nil {
			r.Err = fault.Wrap(fault.CodeOf(fault.As(ctx.Err())), ctx.Err(), "tool %s: not called", clip.Text(c.name))
		}
		return l.reply(r, nil)
	}
	if id := auditID(c.id); id != "" {
		ctx = kernel.WithRequest(ctx, id)
	}
	res, err := l.s.Call(ctx, c.name, args)
	if err != nil {
		r.Err = fault.As(err)
		if _, _, known := l.s.Runtime().Catalog().Lookup(c.name); !known {
			// The kernel audited the attempt (not_found); to the model
			// it is a call outside the list it was given.
			r.Err = fault.New(fault.InvalidInput, "unknown tool %q: call one of the tools listed", clip.Text(c.name))
		}
		return l.reply(r, nil)
	}
	defer res.Release()
	return l.reply(r, res)
}

// argsFor is c's arguments as the tool's schema means them: for a tool
// sent strict with optional properties made nullable, without the nulls
// that stand for arguments left out.
func (l *Loop) argsFor(ctx context.Context, c call) ([]byte, error) {
	e, _, ok := l.s.Runtime().Catalog().Lookup(c.name)
	if !ok || (l.format != OpenAI && l.format != OpenAIResponses) {
		return c.args, nil
	}
	r, err := l.rendered(e)
	if err != nil || !r.spec.Strict || !r.unnull || !l.strictAsked(e.Name) {
		return c.args, nil // a listing failure is the kernel's to report
	}
	full, _, err := e.Schemas()
	if err != nil {
		return c.args, nil
	}
	out, _, err := dropNulls(ctx, full, full, jsontext.Value(c.args), 0)
	return out, err
}

// callName names the call shape of a format, for messages.
func (f Format) callName() string {
	switch f {
	case Anthropic:
		return `an Anthropic tool_use block ({"type":"tool_use","id":...,"name":...,"input":{...}})`
	case OpenAI:
		return `an OpenAI tool call ({"id":...,"type":"function","function":{"name":...,"arguments":"{...}"}})`
	case OpenAIResponses:
		return `an OpenAI Responses function call ({"type":"function_call","call_id":...,"name":...,"arguments":"{...}"})`
	case Gemini:
		return `a Gemini functionCall ({"name":...,"args":{...}})`
	}
	return "a tool call: " + string(f) + " takes none here (use capkit serve)"
}

// parseCall reads raw as format's tool call.
func parseCall(format Format, raw []byte) (call, error) {
	var c call
	if k := jsontext.Value(raw).Kind(); !jsontext.Value(raw).IsValid() || k != '{' {
		if !jsontext.Value(raw).IsValid() {
			return c, errors.New("not valid JSON")
		}
		return c, fmt.Errorf("a JSON %s, not an object", kindName(k))
	}
	switch format {
	case Anthropic:
		var b struct {
			Type  string         `json:"type"`
			ID    string         `json:"id"`
			Name  string         `json:"name"`
			Input jsontext.Value `json:"input"`
		}
		if err := jsonv2.Unmarshal(raw, &b); err != nil {
			return c, err
		}
		if b.Type != "tool_use" {
			return c, fmt.Errorf("type is %q, not tool_use", clip.Text(b.Type))
		}
		c = call{id: b.ID, name: b.Name}
		c.args, c.argsErr = object(b.Input)
	case OpenAI:
		var b struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function *struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		}
		if err := jsonv2.Unmarshal(raw, &b); err != nil {
			return c, err
		}
		if b.Type != "function" || b.Function == nil {
			return c, fmt.Errorf("type is %q, not function with a function member", clip.Text(b.Type))
		}
		c = call{id: b.ID, name: b.Function.Name}
		c.args, c.argsErr = objectText(b.Function.Arguments)
	case OpenAIResponses:
		var b struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		if err := jsonv2.Unmarshal(raw, &b); err != nil {
			return c, err
		}
		if b.Type != "function_call" {
			return c, fmt.Errorf("type is %q, not function_call", clip.Text(b.Type))
		}
		c = call{id: b.CallID, name: b.Name}
		c.args, c.argsErr = objectText(b.Arguments)
	case Gemini:
		var b struct {
			FunctionCall *geminiCall `json:"functionCall"`
			geminiCall
		}
		if err := jsonv2.Unmarshal(raw, &b); err != nil {
			return c, err
		}
		g := b.geminiCall
		if b.FunctionCall != nil {
			if g.Name != "" || g.ID != "" || g.Args != nil {
				return c, errors.New("both a functionCall member and a call's own members")
			}
			g = *b.FunctionCall
		}
		c = call{id: g.ID, name: g.Name}
		c.args, c.argsErr = object(g.Args)
	default:
		return c, errors.New("this format has no tool calls here")
	}
	switch {
	case c.name == "":
		return c, errors.New("no tool name")
	case c.id == "" && format != Gemini:
		return c, errors.New("no call id")
	}
	return c, nil
}

type geminiCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args jsontext.Value `json:"args"`
}

// object checks that v is a JSON object; absent or null is no arguments.
func object(v jsontext.Value) ([]byte, error) {
	switch v.Kind() {
	case 0, 'n':
		return []byte("{}"), nil
	case '{':
		return v, nil
	}
	return nil, fmt.Errorf("are a JSON %s, not an object", kindName(v.Kind()))
}

// objectText checks that the text s (OpenAI's arguments) is a JSON
// object; empty is no arguments.
func objectText(s string) ([]byte, error) {
	if len(bytes.TrimSpace([]byte(s))) == 0 {
		return []byte("{}"), nil
	}
	v := jsontext.Value(s)
	if !v.IsValid() {
		var x any
		if err := jsonv2.Unmarshal(v, &x); err != nil {
			return nil, fmt.Errorf("are not valid JSON (%w)", err)
		}
		return nil, errors.New("are not valid JSON")
	}
	return object(v)
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case '[':
		return "array"
	}
	return "value"
}

// auditID is a provider's call id as the audit log names the request: as
// given when it is a short plain token, else none.
func auditID(id string) string {
	if len(id) == 0 || len(id) > 128 {
		return ""
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '_' && c != '-' && c != '.' && c != ':' {
			return ""
		}
	}
	return id
}

// reply encodes r's result from res (nil when the call failed).
func (l *Loop) reply(r *Reply, res *kernel.Result) (*Reply, error) {
	text, isError := "", r.Err != nil
	if isError {
		text = r.Err.Report(l.s.Trusted()).Text()
	} else {
		text = res.Text
	}
	var img *kernel.Image
	if res != nil {
		img = res.Image
	}
	var err error
	switch l.format {
	case Anthropic:
		r.Result, err = json.Marshal(anthropicResult(r.ID, text, img, isError))
	case OpenAI:
		r.Result, err = json.Marshal(openAIMessage{Role: "tool", ToolCallID: r.ID, Content: text})
		if err == nil && img != nil {
			r.Extra, err = json.Marshal(openAIImageMessage(r, img))
		}
	case OpenAIResponses:
		r.Result, err = json.Marshal(responsesResult(r.ID, text, img))
	case Gemini:
		r.Result, err = json.Marshal(geminiResult(r, text, isError))
		if err == nil && img != nil {
			r.Extra, err = json.Marshal(geminiPart{InlineData: &geminiBlob{MimeType: img.MediaType, Data: img.Data}})
		}
	}
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "the result of tool %s cannot be encoded", r.Name)
	}
	return r, nil
}

// The results' shapes, as the providers document them: Anthropic's
// tool_result block (https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use),
// OpenAI's tool message and function_call_output
// (https://platform.openai.com/docs/guides/function-calling), Gemini's
// functionResponse (https://ai.google.dev/gemini-api/docs/function-calling).
type (
	anthropicBlock struct {
		Type      string           `json:"type"`
		ToolUseID string           `json:"tool_use_id,omitempty"`
		Text      string           `json:"text,omitempty"`
		Source    *anthropicSource `json:"source,omitempty"`
		Content   []anthropicBlock `json:"content,omitempty"`
		IsError   bool             `json:"is_error,omitempty"`
	}
	anthropicSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      []byte `json:"data"` // base64, as encoding/json writes []byte
	}
	openAIMessage struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id,omitempty"`
		Content    any    `json:"content"`
	}
	openAIPart struct {
		Type     string       `json:"type"`
		Text     string       `json:"text,omitempty"`
		ImageURL *openAIImage `json:"image_url,omitempty"`
	}
	openAIImage struct {
		URL string `json:"url"`
	}
	responsesOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output any    `json:"output"`
	}
	responsesPart struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
	}
	geminiPart struct {
		FunctionResponse *geminiResponse `json:"functionResponse,omitempty"`
		InlineData       *geminiBlob     `json:"inlineData,omitempty"`
	}
	geminiResponse struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	geminiBlob struct {
		MimeType string `json:"mimeType"`
		Data     []byte `json:"data"`
	}
)

func anthropicResult(id, text string, img *kernel.Image, isError bool) anthropicBlock {
	b := anthropicBlock{Type: "tool_result", ToolUseID: id, IsError: isError}
	if text != "" {
		b.Content = append(b.Content, anthropicBlock{Type: "text", Text: text})
	}
	if img != nil {
		b.Content = append(b.Content, anthropicBlock{Type: "image", Source: &anthropicSource{Type: "base64", MediaType: img.MediaType, Data: img.Data}})
	}
	return b
}

func dataURL(img *kernel.Image) string {
	return "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

func openAIImageMessage(r *Reply, img *kernel.Image) openAIMessage {
	return openAIMessage{Role: "user", Content: []openAIPart{
		{Type: "text", Text: fmt.Sprintf("The image tool call %s (%s) returned:", r.ID, r.Name)},
		{Type: "image_url", ImageURL: &openAIImage{URL: dataURL(img)}},
	}}
}

func responsesResult(id, text string, img *kernel.Image) responsesOutput {
	if img == nil {
		return responsesOutput{Type: "function_call_output", CallID: id, Output: text}
	}
	return responsesOutput{Type: "function_call_output", CallID: id, Output: []responsesPart{
		{Type: "input_text", Text: text}, {Type: "input_image", ImageURL: dataURL(img)},
	}}
}

// geminiResult is a functionResponse part: "output" holds the result,
// "error" a failure, as Gemini's documentation names them.
func geminiResult(r *Reply, text string, isError bool) geminiPart {
	key := "output"
	if isError {
		key = "error"
	}
	return geminiPart{FunctionResponse: &geminiResponse{ID: r.ID, Name: r.Name, Response: map[string]any{key: text}}}
}
