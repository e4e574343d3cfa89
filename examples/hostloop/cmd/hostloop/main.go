// Command hostloop runs one conversation with a model over its provider's
// API, the model's tools being capkit's on a root:
//
//	ANTHROPIC_API_KEY=... go run ./cmd/hostloop -provider anthropic -root . -prompt "What does README.md say about strict mode?"
//
// -provider is anthropic, openai (Chat Completions), openai-responses or
// gemini; each SDK reads its own key from the environment
// (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/capkit/capkit/examples/hostloop/claudeloop"
	"github.com/capkit/capkit/examples/hostloop/geminiloop"
	"github.com/capkit/capkit/examples/hostloop/openailoop"
	"github.com/capkit/capkit/examples/hostloop/responsesloop"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/serve/hostloop"
)

func main() {
	provider := flag.String("provider", "anthropic", "anthropic, openai, openai-responses or gemini")
	root := flag.String("root", ".", "the directory the model's file tools may read and write")
	model := flag.String("model", "", "the model (default: one of the provider's)")
	prompt := flag.String("prompt", "List the files here and say what this project is.", "the user's request")
	strict := flag.Bool("strict", true, "ask the provider to enforce the tools' schemas, where it can")
	turns := flag.Int("turns", 20, "the most requests")
	flag.Parse()
	if err := run(context.Background(), *provider, *root, *model, *prompt, *strict, *turns); err != nil {
		fmt.Fprintln(os.Stderr, "hostloop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, provider, root, model, prompt string, strict bool, turns int) error {
	format, err := hostloop.ParseFormat(provider)
	if err != nil {
		return err
	}
	cfg, err := config.FromFlags([]string{root}, nil)
	if err != nil {
		return err
	}
	h, err := host.New(cfg, nil)
	if err != nil {
		return err
	}
	defer h.Close()
	s, err := h.NewSession(config.DefaultActor, false) // the model's: not trusted
	if err != nil {
		return err
	}
	loop, err := hostloop.New(s, format, &hostloop.Options{Strict: strict})
	if err != nil {
		return err
	}
	system := h.Instructions(s)
	switch format {
	case hostloop.Anthropic:
		history, err := claudeloop.Run(ctx, anthropic.NewClient(), loop, claudeloop.Params{Model: or(model, "claude-sonnet-4-5"), System: system, Prompt: prompt, MaxTokens: 4096, MaxTurns: turns})
		if err == nil {
			fmt.Printf("%d messages\n", len(history))
		}
		return err
	case hostloop.OpenAI:
		history, err := openailoop.Run(ctx, openai.NewClient(), loop, openailoop.Params{Model: or(model, "gpt-5"), System: system, Prompt: prompt, MaxTurns: turns})
		if err == nil {
			fmt.Printf("%d messages\n", len(history))
		}
		return err
	case hostloop.OpenAIResponses:
		input, err := responsesloop.Run(ctx, openai.NewClient(), loop, responsesloop.Params{Model: or(model, "gpt-5"), System: system, Prompt: prompt, MaxTurns: turns})
		if err == nil {
			fmt.Printf("%d input items\n", len(input))
		}
		return err
	case hostloop.Gemini:
		client, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendGeminiAPI})
		if err != nil {
			return err
		}
		contents, err := geminiloop.Run(ctx, client, loop, geminiloop.Params{Model: or(model, "gemini-2.5-flash"), System: system, Prompt: prompt, MaxTurns: turns})
		if err == nil {
			fmt.Printf("%d contents\n", len(contents))
		}
		return err
	}
	return fmt.Errorf("-provider %s: capkit serve is the MCP route", provider)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
