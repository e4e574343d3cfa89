package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pmezard/go-difflib/difflib"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Definition is what a model is shown of one upstream tool, in the form
// that is pinned: its name, title, description, input and output schemas
// and behaviour hints. Approving a tool records its Definition and
// Digest; serve offers the tool only while the upstream lists the same.
//
// The form is semantic, not the bytes the upstream sent: the schemas in
// canonical JSON (RFC 8785: members sorted, no spaces, numbers in their
// shortest form) and the hints with the protocol's defaults filled in, so
// an upstream that sends the same tool differently spelled still matches,
// and one that changes anything a model reads does not.
type Definition struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	InputSchema  jsontext.Value `json:"inputSchema"`
	OutputSchema jsontext.Value `json:"outputSchema,omitempty"`
	Annotations  Annotations    `json:"annotations"`
}

// Annotations are a tool's behaviour hints with the protocol's defaults
// applied (destructive and open-world unless said otherwise).
type Annotations struct {
	Title       string `json:"title,omitempty"`
	ReadOnly    bool   `json:"readOnlyHint"`
	Destructive bool   `json:"destructiveHint"`
	Idempotent  bool   `json:"idempotentHint"`
	OpenWorld   bool   `json:"openWorldHint"`
}

// definitionOf is the Definition of a tool as an upstream listed it.
func definitionOf(t *mcp.Tool) (*Definition, error) {
	d := &Definition{Name: t.Name, Title: t.Title, Description: t.Description,
		Annotations: Annotations{Destructive: true, OpenWorld: true}}
	var err error
	if d.InputSchema, err = canonicalSchema(t.InputSchema); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if d.InputSchema == nil {
		return nil, fmt.Errorf("no input schema")
	}
	if d.OutputSchema, err = canonicalSchema(t.OutputSchema); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	for _, s := range []struct {
		what string
		v    jsontext.Value
	}{{"input", d.InputSchema}, {"output", d.OutputSchema}} {
		if s.v != nil && !objectSchema(s.v) {
			return nil, fmt.Errorf("its %s schema is not an object schema (\"type\": \"object\"), as the protocol asks", s.what)
		}
	}
	if a := t.Annotations; a != nil {
		d.Annotations = Annotations{Title: a.Title, ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint, Destructive: true, OpenWorld: true}
		if a.DestructiveHint != nil {
			d.Annotations.Destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			d.Annotations.OpenWorld = *a.OpenWorldHint
		}
	}
	if n := len(d.encode()); n > limits.UpstreamMaxDefinitionBytes {
		return nil, fmt.Errorf("its definition is %s, past the %s a definition may have", limits.Bytes(int64(n)), limits.Bytes(limits.UpstreamMaxDefinitionBytes))
	}
	return d, nil
}

// canonicalSchema is a schema as the SDK decoded it, in canonical JSON;
// nil for none.
func canonicalSchema(s any) (jsontext.Value, error) {
	if s == nil {
		return nil, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if string(v) == "null" {
		return nil, nil
	}
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	if v[0] != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	return v, nil
}

// objectSchema reports whether v is a schema whose type is "object".
func objectSchema(v jsontext.Value) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(v, &s) == nil && s.Type == "object"
}

// encode is d in canonical JSON: what its digest is of.
func (d *Definition) encode() []byte {
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // strings, bools and valid JSON values only
	}
	v := jsontext.Value(b)
	if err := v.Canonicalize(); err != nil {
		panic(err)
	}
	return v
}

// Digest is the hex SHA-256 of d's canonical encoding.
func (d *Definition) Digest() string {
	sum := sha256.Sum256(d.encode())
	return hex.EncodeToString(sum[:])
}

// Changes names the parts of d that differ from was ("description",
// "inputSchema", ...), in the order a definition has them.
func (d *Definition) Changes(was *Definition) []string {
	var out []string
	for _, f := range d.fields() {
		if f.value != was.field(f.name) {
			out = append(out, f.name)
		}
	}
	return out
}

type definitionField struct{ name, value string }

// fields are d's parts as text, schemas indented for a line diff.
func (d *Definition) fields() []definitionField {
	ann, _ := json.MarshalIndent(d.Annotations, "", "  ")
	return []definitionField{
		{"name", d.Name},
		{"title", d.Title},
		{"description", d.Description},
		{"inputSchema", indented(d.InputSchema)},
		{"outputSchema", indented(d.OutputSchema)},
		{"annotations", string(ann)},
	}
}

func (d *Definition) field(name string) string {
	for _, f := range d.fields() {
		if f.name == name {
			return f.value
		}
	}
	return ""
}

func indented(v jsontext.Value) string {
	if v == nil {
		return ""
	}
	c := slices.Clone(v)
	if err := c.Indent(jsontext.WithIndent("  ")); err != nil {
		return string(v)
	}
	return string(c)
}

// Diff is a unified diff, part by part, of what changed from was to d,
// for the person reviewing it; was nil shows d whole, as new.
func (d *Definition) Diff(was *Definition) string {
	var b strings.Builder
	if was == nil {
		for _, f := range d.fields() {
			if f.value == "" {
				continue
			}
			if strings.Contains(f.value, "\n") {
				b.WriteString(f.name + ":\n  " + strings.ReplaceAll(f.value, "\n", "\n  ") + "\n")
			} else {
				b.WriteString(f.name + ": " + f.value + "\n")
			}
		}
		return b.String()
	}
	for _, f := range d.fields() {
		old := was.field(f.name)
		if old == f.value {
			continue
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(withNewline(old)), B: difflib.SplitLines(withNewline(f.value)),
			FromFile: "approved " + f.name, ToFile: "listed " + f.name, Context: 3,
		})
		if err != nil {
			text = "- " + old + "\n+ " + f.value + "\n"
		}
		b.WriteString(text)
	}
	return b.String()
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// checkDefinition refuses a definition read from a lock file that a
// listing could not have produced.
func checkDefinition(d *Definition) error {
	if d.Name == "" || d.InputSchema == nil {
		return fault.New(fault.Integrity, "a definition without a name or an input schema")
	}
	for _, v := range []jsontext.Value{d.InputSchema, d.OutputSchema} {
		if v == nil {
			continue
		}
		c := slices.Clone(v)
		if err := c.Canonicalize(); err != nil || v[0] != '{' {
			return fault.New(fault.Integrity, "tool %q: a schema that is not a JSON object", d.Name)
		}
	}
	return nil
}
