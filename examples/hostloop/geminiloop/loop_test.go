package geminiloop

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/capkit/capkit/examples/hostloop/internal/replay"
	"github.com/capkit/capkit/examples/hostloop/internal/scenario"
	"github.com/capkit/capkit/serve/hostloop"
)

var extract = scenario.Extract{
	Format: "gemini",
	Defs: func(req map[string]any) []any {
		var decls []any
		for _, tool := range scenario.List(req["tools"]) {
			decls = append(decls, scenario.List(scenario.Path(tool, "functionDeclarations"))...)
		}
		return decls
	},
	Tools: func(req map[string]any) []string {
		var names []string
		for _, tool := range scenario.List(req["tools"]) {
			for _, d := range scenario.List(scenario.Path(tool, "functionDeclarations")) {
				names = append(names, scenario.Str(scenario.Path(d, "name")))
			}
		}
		return names
	},
	Results: func(req map[string]any) []string {
		var texts []string
		for _, c := range scenario.List(req["contents"]) {
			for _, p := range scenario.List(scenario.Path(c, "parts")) {
				r := scenario.Path(p, "functionResponse", "response")
				if r == nil {
					continue
				}
				text := scenario.Str(scenario.Path(r, "output"))
				if e := scenario.Str(scenario.Path(r, "error")); e != "" {
					text = e
				}
				texts = append(texts, text)
			}
		}
		return texts
	},
}

func TestTranscript(t *testing.T) {
	root, s, system := scenario.Root(t)
	srv := replay.Start(t, scenario.Turns(t, replay.Load(t, "testdata/transcript.json"), extract))
	loop, err := hostloop.New(s, hostloop.Gemini, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "recorded", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	contents, err := Run(ctx, client, loop, Params{Model: "gemini-2.5-flash", System: system, Prompt: scenario.Prompt, MaxTurns: 10})
	if err != nil {
		t.Fatal(err)
	}
	srv.Done(t)
	scenario.After(t, root)
	if len(contents) != 12 {
		t.Errorf("%d contents, want 12 (the prompt, 6 answers, 5 function responses)", len(contents))
	}
}
