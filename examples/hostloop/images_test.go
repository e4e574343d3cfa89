package hostloop_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/capkit/capkit/examples/hostloop/internal/scenario"
	"github.com/capkit/capkit/serve/hostloop"
)

// A 1x1 PNG.
const dotPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// TestImageResultsAsTheSDKsTypes: the result of reading an image, in each
// format, decodes as the SDK's own parameter types with the image in
// them (the loops pass the results on as raw JSON, so the SDK's encoder
// never vouches for them).
func TestImageResultsAsTheSDKsTypes(t *testing.T) {
	root, s, _ := scenario.Root(t)
	png, _ := base64.StdEncoding.DecodeString(dotPNG)
	if err := os.WriteFile(filepath.Join(root, "dot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	call := func(f hostloop.Format, raw string) *hostloop.Reply {
		t.Helper()
		l, err := hostloop.New(s, f, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Call(context.Background(), []byte(raw))
		if err != nil || r.Err != nil {
			t.Fatalf("%s: %v %v", f, err, r.Err)
		}
		return r
	}
	dataURL := "data:image/png;base64," + dotPNG

	r := call(hostloop.Anthropic, `{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"dot.png"}}`)
	var tr anthropic.ToolResultBlockParam
	if err := json.Unmarshal(r.Result, &tr); err != nil {
		t.Fatal(err)
	}
	var img *anthropic.Base64ImageSourceParam
	for _, c := range tr.Content {
		if c.OfImage != nil {
			img = c.OfImage.Source.OfBase64
		}
	}
	if tr.ToolUseID != "toolu_1" || img == nil || img.MediaType != "image/png" || img.Data != dotPNG {
		t.Errorf("anthropic: %s", r.Result)
	}

	r = call(hostloop.OpenAI, `{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"dot.png\"}"}}`)
	var tool openai.ChatCompletionToolMessageParam
	var user openai.ChatCompletionUserMessageParam
	if err := json.Unmarshal(r.Result, &tool); err != nil || tool.ToolCallID != "call_1" {
		t.Errorf("openai tool message: %v %s", err, r.Result)
	}
	if err := json.Unmarshal(r.Extra, &user); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range user.Content.OfArrayOfContentParts {
		found = found || (p.OfImageURL != nil && p.OfImageURL.ImageURL.URL == dataURL)
	}
	if !found {
		t.Errorf("openai: no image in the user message %s", r.Extra)
	}

	r = call(hostloop.OpenAIResponses, `{"type":"function_call","call_id":"call_2","name":"read_file","arguments":"{\"path\":\"dot.png\"}"}`)
	var out responses.ResponseInputItemFunctionCallOutputParam
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatal(err)
	}
	found = false
	for _, item := range out.Output.OfResponseFunctionCallOutputItemArray {
		found = found || (item.OfInputImage != nil && item.OfInputImage.ImageURL.Value == dataURL)
	}
	if out.CallID.Value != "call_2" || !found {
		t.Errorf("openai-responses: %s", r.Result)
	}

	r = call(hostloop.Gemini, `{"functionCall":{"id":"fc_1","name":"read_file","args":{"path":"dot.png"}}}`)
	var resp, blob genai.Part
	if err := json.Unmarshal(r.Result, &resp); err != nil || resp.FunctionResponse == nil || resp.FunctionResponse.Name != "read_file" {
		t.Errorf("gemini: %v %s", err, r.Result)
	}
	if err := json.Unmarshal(r.Extra, &blob); err != nil {
		t.Fatal(err)
	}
	if blob.InlineData == nil || blob.InlineData.MIMEType != "image/png" || !bytes.Equal(blob.InlineData.Data, png) {
		t.Errorf("gemini: %s", r.Extra)
	}
}
