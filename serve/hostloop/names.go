package hostloop

import "fmt"

// nameRule is a provider's rule for tool names: the bytes allowed, those
// allowed first, and the longest name.
type nameRule struct {
	rest, first func(c byte) bool
	max         int
	text        string // the rule as the provider states it
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// The providers' name rules. The catalog's own (^[a-z][a-z0-9_]{0,63}$)
// is within each; checkName holds every listing to them all the same, so
// that a catalog entry registered under a looser rule fails loudly rather
// than at the provider.
var nameRules = map[Format]nameRule{
	// https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names
	MCP: {rest: func(c byte) bool { return alnum(c) || c == '_' || c == '-' || c == '.' }, max: 128,
		text: "1 to 128 of A-Z, a-z, 0-9, _, - and ."},
	// https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools
	Anthropic: {rest: func(c byte) bool { return alnum(c) || c == '_' || c == '-' }, max: 64,
		text: "^[a-zA-Z0-9_-]{1,64}$"},
	// https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools
	OpenAI: {rest: func(c byte) bool { return alnum(c) || c == '_' || c == '-' }, max: 64,
		text: "a-z, A-Z, 0-9, underscores and dashes, at most 64"},
	OpenAIResponses: {rest: func(c byte) bool { return alnum(c) || c == '_' || c == '-' }, max: 64,
		text: "a-z, A-Z, 0-9, underscores and dashes, at most 64"},
	// https://ai.google.dev/api/caching#FunctionDeclaration
	Gemini: {first: func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' },
		rest: func(c byte) bool { return alnum(c) || c == '_' || c == '-' || c == '.' || c == ':' }, max: 64,
		text: "starts with a letter or _, then a-z, A-Z, 0-9, _, ., : and -, at most 64"},
}

// checkName fails when name breaks format's name rule.
func checkName(name string, format Format) error {
	r := nameRules[format]
	ok := len(name) > 0 && len(name) <= r.max
	for i := 0; ok && i < len(name); i++ {
		ok = r.rest(name[i]) && (i > 0 || r.first == nil || r.first(name[i]))
	}
	if !ok {
		return fmt.Errorf("tool name %q breaks the %s name rule (%s)", name, format, r.text)
	}
	return nil
}

// geminiParamName reports whether a property name keeps the rule of
// Gemini's parameters subset: "must start with a letter or an underscore
// and must only contain chars a-z, A-Z, 0-9, or underscores with a maximum
// length of 64"
// (https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Tool#FunctionDeclaration).
func geminiParamName(name string) bool {
	if len(name) == 0 || len(name) > 64 || alnum(name[0]) && name[0] <= '9' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !alnum(name[i]) && name[i] != '_' {
			return false
		}
	}
	return true
}
