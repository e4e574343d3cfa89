package toolrules

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A Rule is one documented constraint on a provider's tool definitions.
type Rule struct {
	// Formats are the formats it applies to (serve/hostloop's names).
	Formats []string
	// Strict: the rule applies to definitions sent strict only.
	Strict bool
	Name   string
	// Doc is where the provider states it.
	Doc string
	// Check returns the definition's violations; def is one tool
	// definition decoded as JSON.
	Check func(def map[string]any) []string
}

// Docs of the rules.
const (
	docMCPNames        = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names"
	docMCPTool         = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool"
	docAnthropicTools  = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools"
	docAnthropicStrict = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations"
	docAnthropicCplx   = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs" // its explicit limits of strict schemas per request
	docOpenAITools     = "https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools"
	docOpenAIRespTools = "https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools"
	docOpenAIStrict    = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas"
	docGeminiDecl      = "https://ai.google.dev/api/caching#FunctionDeclaration"
	docGeminiSchema    = "https://ai.google.dev/api/caching#Schema"
	docVertexParams    = "https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Tool#FunctionDeclaration"
)

var (
	anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	openAIName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	geminiName    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)
	mcpName       = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	geminiParam   = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
)

// The keywords of each strict subset, and of Gemini's schema subset.
var (
	openAIStrictKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "enum", "const",
		"anyOf", "$ref", "$defs", "definitions", "description", "pattern", "format", "multipleOf", "maximum",
		"exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems"}
	anthropicStrictKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "enum", "const",
		"anyOf", "allOf", "$ref", "$defs", "definitions", "description", "default", "format", "minItems", "pattern"}
	geminiKeywords = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
		"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
		"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}
	openAIFormats    = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
	anthropicFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
	geminiTypes      = []string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
	jsonTypes        = []string{"string", "number", "integer", "boolean", "object", "array", "null"}
)

// Rules are every rule, per format.
var Rules = []Rule{
	{Formats: []string{"mcp"}, Name: "tool name: 1-128 of A-Z a-z 0-9 _ - .", Doc: docMCPNames,
		Check: nameRule("name", mcpName)},
	{Formats: []string{"mcp"}, Name: "inputSchema is an object schema", Doc: docMCPTool,
		Check: rootObject("inputSchema")},
	{Formats: []string{"anthropic"}, Name: "name matches ^[a-zA-Z0-9_-]{1,64}$", Doc: docAnthropicTools,
		Check: nameRule("name", anthropicName)},
	{Formats: []string{"anthropic"}, Name: "input_schema is an object schema", Doc: docAnthropicTools,
		Check: rootObject("input_schema")},
	{Formats: []string{"openai"}, Name: `a tool is {"type":"function","function":{name, description, parameters}}`, Doc: docOpenAITools,
		Check: func(d map[string]any) []string {
			f, ok := d["function"].(map[string]any)
			if d["type"] != "function" || !ok {
				return []string{"not a function tool"}
			}
			return append(nameRule("name", openAIName)(f), rootObject("parameters")(f)...)
		}},
	{Formats: []string{"openai-responses"}, Name: `a tool is {"type":"function", name, description, parameters, strict}`, Doc: docOpenAIRespTools,
		Check: func(d map[string]any) []string {
			v := append(nameRule("name", openAIName)(d), rootObject("parameters")(d)...)
			if _, ok := d["strict"].(bool); !ok || d["type"] != "function" {
				v = append(v, "a Responses function tool names its strict mode (the default is true)")
			}
			return v
		}},
	{Formats: []string{"gemini"}, Name: "name: a letter or _ first, then a-z A-Z 0-9 _ . : -, at most 64", Doc: docGeminiDecl,
		Check: nameRule("name", geminiName)},
	{Formats: []string{"gemini"}, Name: "parameters and parametersJsonSchema are mutually exclusive", Doc: docGeminiDecl,
		Check: func(d map[string]any) []string {
			if d["parameters"] != nil && d["parametersJsonSchema"] != nil {
				return []string{"both parameters and parametersJsonSchema"}
			}
			return nil
		}},
	{Formats: []string{"gemini"}, Name: "parameters use the Schema subset: its fields, upper-case types, string enums", Doc: docGeminiSchema,
		Check: func(d map[string]any) []string { return walk(d["parameters"], "", geminiNode) }},
	{Formats: []string{"gemini"}, Name: "parameter names: a letter or _ first, then a-z A-Z 0-9 _, at most 64", Doc: docVertexParams,
		Check: func(d map[string]any) []string { return walk(d["parameters"], "", geminiParamNames) }},
	{Formats: []string{"openai", "openai-responses"}, Strict: true, Name: "strict: the subset's keywords, types and formats", Doc: docOpenAIStrict,
		Check: strictSchema(openAIParams, openAIStrictKeywords, openAIFormats)},
	{Formats: []string{"openai", "openai-responses"}, Strict: true, Name: "strict: every object has additionalProperties false", Doc: docOpenAIStrict,
		Check: func(d map[string]any) []string { return walk(openAIParams(d), "", closed) }},
	{Formats: []string{"openai", "openai-responses"}, Strict: true, Name: "strict: every property is required", Doc: docOpenAIStrict,
		Check: func(d map[string]any) []string { return walk(openAIParams(d), "", allRequired) }},
	{Formats: []string{"openai", "openai-responses"}, Strict: true, Name: "strict: the root is an object, not anyOf", Doc: docOpenAIStrict,
		Check: func(d map[string]any) []string {
			if p, _ := openAIParams(d).(map[string]any); p["anyOf"] != nil || p["type"] != "object" {
				return []string{"the root is not an object schema"}
			}
			return nil
		}},
	{Formats: []string{"openai", "openai-responses"}, Strict: true, Name: "strict: at most 5000 properties, 10 levels, 1000 enum values, 120,000 characters", Doc: docOpenAIStrict,
		Check: func(d map[string]any) []string { return openAISizes(openAIParams(d)) }},
	{Formats: []string{"anthropic"}, Strict: true, Name: "strict: the subset's keywords, types and formats", Doc: docAnthropicStrict,
		Check: strictSchema(func(d map[string]any) any { return d["input_schema"] }, anthropicStrictKeywords, anthropicFormats)},
	{Formats: []string{"anthropic"}, Strict: true, Name: "strict: additionalProperties false on every object", Doc: docAnthropicStrict,
		Check: func(d map[string]any) []string { return walk(d["input_schema"], "", closed) }},
	{Formats: []string{"anthropic"}, Strict: true, Name: "strict: enum values are strings, numbers, booleans or null; minItems is 0 or 1", Doc: docAnthropicStrict,
		Check: func(d map[string]any) []string { return walk(d["input_schema"], "", anthropicValues) }},
	{Formats: []string{"anthropic"}, Strict: true, Name: "strict: no recursive schema", Doc: docAnthropicStrict,
		Check: func(d map[string]any) []string {
			if s, _ := d["input_schema"].(map[string]any); recursive(s) {
				return []string{"a $ref leads back into itself"}
			}
			return nil
		}},
}

// RequestRule is a rule on a request's whole list of tools.
type RequestRule struct {
	Formats []string
	Name    string
	Doc     string
	Check   func(defs []map[string]any) []string
}

// RequestRules apply to the list of tools a request carries.
var RequestRules = []RequestRule{
	{Formats: []string{"anthropic"}, Name: "at most 20 strict tools, 24 optional parameters and 16 with anyOf or a type list, across a request's strict tools", Doc: docAnthropicCplx,
		Check: func(defs []map[string]any) []string {
			tools, optional, unions := 0, 0, 0
			for _, d := range defs {
				if d["strict"] != true {
					continue
				}
				tools++
				walk(d["input_schema"], "", func(n map[string]any, _ string) []string {
					if props, ok := n["properties"].(map[string]any); ok {
						optional += len(props) - len(strs(n["required"]))
					}
					if _, ok := n["anyOf"]; ok || len(strs(n["type"])) > 1 {
						unions++
					}
					return nil
				})
			}
			if tools > 20 || optional > 24 || unions > 16 {
				return []string{fmt.Sprintf("%d strict tools, %d optional parameters, %d unions", tools, optional, unions)}
			}
			return nil
		}},
	{Formats: []string{"mcp", "anthropic", "openai", "openai-responses", "gemini"}, Name: "tool names are unique in a request", Doc: docAnthropicTools,
		Check: func(defs []map[string]any) []string {
			seen := map[string]bool{}
			var v []string
			for _, d := range defs {
				n, _ := d["name"].(string)
				if f, ok := d["function"].(map[string]any); ok {
					n, _ = f["name"].(string)
				}
				if seen[n] {
					v = append(v, "duplicate name "+n)
				}
				seen[n] = true
			}
			return v
		}},
}

// Check returns the violations of every rule that applies to defs, the
// definitions of one request in format: each with its rule and the page
// that states it.
func Check(format string, defs []json.RawMessage) error {
	var errs []error
	decoded := make([]map[string]any, 0, len(defs))
	for _, raw := range defs {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("a definition is not a JSON object: %w", err)
		}
		decoded = append(decoded, d)
		for _, r := range Rules {
			if !slices.Contains(r.Formats, format) || (r.Strict && !isStrict(d)) {
				continue
			}
			for _, v := range r.Check(d) {
				errs = append(errs, fmt.Errorf("%s %s: %s: %s (%s)", format, toolName(d), r.Name, v, r.Doc))
			}
		}
	}
	for _, r := range RequestRules {
		if !slices.Contains(r.Formats, format) {
			continue
		}
		for _, v := range r.Check(decoded) {
			errs = append(errs, fmt.Errorf("%s request: %s: %s (%s)", format, r.Name, v, r.Doc))
		}
	}
	return errors.Join(errs...)
}

func isStrict(d map[string]any) bool {
	if f, ok := d["function"].(map[string]any); ok {
		return f["strict"] == true
	}
	return d["strict"] == true
}

func toolName(d map[string]any) string {
	if f, ok := d["function"].(map[string]any); ok {
		d = f
	}
	n, _ := d["name"].(string)
	return n
}

func openAIParams(d map[string]any) any {
	if f, ok := d["function"].(map[string]any); ok {
		return f["parameters"]
	}
	return d["parameters"]
}

func nameRule(key string, re *regexp.Regexp) func(map[string]any) []string {
	return func(d map[string]any) []string {
		if n, _ := d[key].(string); !re.MatchString(n) {
			return []string{fmt.Sprintf("name %q does not match %s", n, re)}
		}
		return nil
	}
}

func rootObject(key string) func(map[string]any) []string {
	return func(d map[string]any) []string {
		if s, ok := d[key].(map[string]any); !ok || s["type"] != "object" {
			return []string{key + " is not an object schema"}
		}
		return nil
	}
}

// walk calls f on every subschema of s (properties, items, anyOf, $defs,
// definitions, additionalProperties as a schema), with its pointer.
func walk(s any, ptr string, f func(n map[string]any, ptr string) []string) []string {
	n, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	v := f(n, ptr)
	for _, key := range []string{"properties", "$defs", "definitions"} {
		m, _ := n[key].(map[string]any)
		for _, name := range sorted(m) {
			v = append(v, walk(m[name], ptr+"/"+key+"/"+name, f)...)
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		v = append(v, walk(n[key], ptr+"/"+key, f)...)
	}
	for _, key := range []string{"anyOf", "allOf", "oneOf"} {
		l, _ := n[key].([]any)
		for i, b := range l {
			v = append(v, walk(b, fmt.Sprintf("%s/%s/%d", ptr, key, i), f)...)
		}
	}
	return v
}

func sorted(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// strs is a string or a list of strings as a list.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func isObjectNode(n map[string]any) bool {
	return slices.Contains(strs(n["type"]), "object") || n["properties"] != nil
}

func strictSchema(params func(map[string]any) any, keywords, formats []string) func(map[string]any) []string {
	return func(d map[string]any) []string {
		return walk(params(d), "", func(n map[string]any, ptr string) []string {
			var v []string
			for _, k := range sorted(n) {
				if !slices.Contains(keywords, k) {
					v = append(v, fmt.Sprintf("%s: keyword %q is not in the strict subset", ptr, k))
				}
			}
			for _, t := range strs(n["type"]) {
				if !slices.Contains(jsonTypes, t) {
					v = append(v, fmt.Sprintf("%s: type %q", ptr, t))
				}
			}
			if f, ok := n["format"].(string); ok && !slices.Contains(formats, f) {
				v = append(v, fmt.Sprintf("%s: format %q is not in the strict subset", ptr, f))
			}
			if n["type"] == nil && n["anyOf"] == nil && n["$ref"] == nil && n["enum"] == nil && n["const"] == nil {
				v = append(v, ptr+": no type")
			}
			return v
		})
	}
}

func closed(n map[string]any, ptr string) []string {
	if isObjectNode(n) && n["additionalProperties"] != false {
		return []string{ptr + ": an object without additionalProperties false"}
	}
	return nil
}

func allRequired(n map[string]any, ptr string) []string {
	props, _ := n["properties"].(map[string]any)
	req := strs(n["required"])
	var v []string
	for _, name := range sorted(props) {
		if !slices.Contains(req, name) {
			v = append(v, fmt.Sprintf("%s: property %q is not required", ptr, name))
		}
	}
	return v
}

func anthropicValues(n map[string]any, ptr string) []string {
	var v []string
	vals, _ := n["enum"].([]any)
	if c, ok := n["const"]; ok {
		vals = append(vals, c)
	}
	for _, e := range vals {
		switch e.(type) {
		case map[string]any, []any:
			v = append(v, ptr+": a complex enum or const value")
		}
	}
	if m, ok := n["minItems"].(float64); ok && m != 0 && m != 1 {
		v = append(v, fmt.Sprintf("%s: minItems %v", ptr, m))
	}
	if p, ok := n["pattern"].(string); ok && strings.Contains(p, `\b`) {
		v = append(v, ptr+`: a pattern with \b`)
	}
	return v
}

func openAISizes(s any) []string {
	props, enums, chars, deepest := 0, 0, 0, 0
	var depth func(s any, d int)
	depth = func(s any, d int) {
		n, ok := s.(map[string]any)
		if !ok {
			return
		}
		deepest = max(deepest, d)
		if p, ok := n["properties"].(map[string]any); ok {
			props += len(p)
			for name, c := range p {
				chars += len(name)
				depth(c, d+1)
			}
		}
		depth(n["items"], d+1)
		for _, key := range []string{"$defs", "definitions"} {
			m, _ := n[key].(map[string]any)
			for name, c := range m {
				chars += len(name)
				depth(c, 1)
			}
		}
		l, _ := n["anyOf"].([]any)
		for _, b := range l {
			depth(b, d)
		}
		e, _ := n["enum"].([]any)
		enums += len(e)
		for _, x := range append(e, n["const"]) {
			if str, ok := x.(string); ok {
				chars += len(str)
			}
		}
	}
	depth(s, 0)
	if props > 5000 || deepest > 10 || enums > 1000 || chars > 120_000 {
		return []string{fmt.Sprintf("%d properties, %d levels, %d enum values, %d characters", props, deepest, enums, chars)}
	}
	return nil
}

func geminiNode(n map[string]any, ptr string) []string {
	var v []string
	for _, k := range sorted(n) {
		if !slices.Contains(geminiKeywords, k) {
			v = append(v, fmt.Sprintf("%s: field %q is not in the Schema subset", ptr, k))
		}
	}
	if t, ok := n["type"]; ok {
		if s, _ := t.(string); !slices.Contains(geminiTypes, s) {
			v = append(v, fmt.Sprintf("%s: type %v is not one of %v", ptr, t, geminiTypes))
		}
	} else if n["anyOf"] == nil {
		v = append(v, ptr+": no type")
	}
	if e, ok := n["enum"].([]any); ok {
		for _, x := range e {
			if _, ok := x.(string); !ok {
				v = append(v, ptr+": a non-string enum value")
			}
		}
		if n["type"] != "STRING" {
			v = append(v, ptr+": an enum whose type is not STRING")
		}
	}
	return v
}

func geminiParamNames(n map[string]any, ptr string) []string {
	props, _ := n["properties"].(map[string]any)
	var v []string
	for _, name := range sorted(props) {
		if !geminiParam.MatchString(name) {
			v = append(v, fmt.Sprintf("%s: parameter name %q", ptr, name))
		}
	}
	return v
}

// recursive reports whether a local $ref in s leads to a schema it is
// inside.
func recursive(root map[string]any) bool {
	resolve := func(ref string) any {
		if ref == "#" {
			return root
		}
		for _, key := range []string{"$defs", "definitions"} {
			if name, ok := strings.CutPrefix(ref, "#/"+key+"/"); ok {
				m, _ := root[key].(map[string]any)
				return m[name]
			}
		}
		return nil
	}
	var onPath []any
	var visit func(s any) bool
	visit = func(s any) bool {
		n, ok := s.(map[string]any)
		if !ok {
			return false
		}
		for _, p := range onPath {
			if fmt.Sprintf("%p", p) == fmt.Sprintf("%p", n) {
				return true
			}
		}
		onPath = append(onPath, n)
		defer func() { onPath = onPath[:len(onPath)-1] }()
		if ref, ok := n["$ref"].(string); ok && visit(resolve(ref)) {
			return true
		}
		found := false
		walkChildren(n, func(c any) { found = found || visit(c) })
		return found
	}
	return visit(root)
}

func walkChildren(n map[string]any, f func(any)) {
	if p, ok := n["properties"].(map[string]any); ok {
		for _, name := range sorted(p) {
			f(p[name])
		}
	}
	f(n["items"])
	for _, key := range []string{"anyOf", "allOf", "oneOf"} {
		l, _ := n[key].([]any)
		for _, b := range l {
			f(b)
		}
	}
}
