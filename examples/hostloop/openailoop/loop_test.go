package openailoop

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/capkit/capkit/examples/hostloop/internal/replay"
	"github.com/capkit/capkit/examples/hostloop/internal/scenario"
	"github.com/capkit/capkit/serve/hostloop"
)

var extract = scenario.Extract{
	Format: "openai",
	Strict: true,
	Defs:   func(req map[string]any) []any { return scenario.List(req["tools"]) },
	Tools: func(req map[string]any) []string {
		var names []string
		for _, tool := range scenario.List(req["tools"]) {
			names = append(names, scenario.Str(scenario.Path(tool, "function", "name")))
		}
		return names
	},
	Results: func(req map[string]any) []string {
		var texts []string
		for _, m := range scenario.List(req["messages"]) {
			if scenario.Str(scenario.Path(m, "role")) == "tool" {
				texts = append(texts, scenario.Str(scenario.Path(m, "content")))
			}
		}
		return texts
	},
}

func TestTranscript(t *testing.T) {
	root, s, system := scenario.Root(t)
	srv := replay.Start(t, scenario.Turns(t, replay.Load(t, "testdata/transcript.json"), extract))
	loop, err := hostloop.New(s, hostloop.OpenAI, &hostloop.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("recorded"), option.WithMaxRetries(0))
	history, err := Run(context.Background(), client, loop, Params{Model: "gpt-5", System: system, Prompt: scenario.Prompt, MaxTurns: 10})
	if err != nil {
		t.Fatal(err)
	}
	srv.Done(t)
	scenario.After(t, root)
	if len(history) != 13 {
		t.Errorf("%d messages, want 13 (system, prompt, 6 answers, 5 tool messages)", len(history))
	}
}
