package claudeloop

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/capkit/capkit/examples/hostloop/internal/replay"
	"github.com/capkit/capkit/examples/hostloop/internal/scenario"
	"github.com/capkit/capkit/serve/hostloop"
)

var extract = scenario.Extract{
	Format: "anthropic",
	Strict: true,
	Defs:   func(req map[string]any) []any { return scenario.List(req["tools"]) },
	Tools: func(req map[string]any) []string {
		var names []string
		for _, tool := range scenario.List(req["tools"]) {
			names = append(names, scenario.Str(scenario.Path(tool, "name")))
		}
		return names
	},
	Results: func(req map[string]any) []string {
		var texts []string
		for _, m := range scenario.List(req["messages"]) {
			for _, b := range scenario.List(scenario.Path(m, "content")) {
				if scenario.Str(scenario.Path(b, "type")) != "tool_result" {
					continue
				}
				text := ""
				for _, c := range scenario.List(scenario.Path(b, "content")) {
					text += scenario.Str(scenario.Path(c, "text"))
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
	loop, err := hostloop.New(s, hostloop.Anthropic, &hostloop.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("recorded"), option.WithMaxRetries(0))
	history, err := Run(context.Background(), client, loop, Params{Model: "claude-sonnet-4-5", System: system, Prompt: scenario.Prompt, MaxTokens: 1024, MaxTurns: 10})
	if err != nil {
		t.Fatal(err)
	}
	srv.Done(t)
	scenario.After(t, root)
	if len(history) != 12 {
		t.Errorf("%d messages, want 12 (the prompt, 6 answers, 5 tool results)", len(history))
	}
}
