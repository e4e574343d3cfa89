// Package hostloop is a module of its own: a host's agent loop against each
// provider's API, on the provider's official Go SDK, with capkit's tools
// through serve/hostloop. The SDKs stay out of capkit's own go.mod.
//
//	claudeloop     Anthropic Messages
//	openailoop     OpenAI Chat Completions
//	responsesloop  OpenAI Responses
//	geminiloop     Gemini
//	cmd/hostloop   one of them against the real API, on a root
//
// Each loop's test drives it with a recorded model transcript, served on
// loopback (internal/replay): the model lists a directory, searches for a
// tool, reads a file, edits it and is refused, and every request is checked
// for the tools offered and the results fed back.
package hostloop
