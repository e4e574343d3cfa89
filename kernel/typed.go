package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel/catalog"
)

// Texter is implemented by typed results that render their own text for the
// model. Typed results without it are shown as their JSON encoding.
// Implementations keep large content (file text) out of their JSON fields,
// so a response never carries the same content twice.
type Texter interface {
	ToolText() string
}

// TypedHandler handles a call whose arguments decode into In and whose
// result encodes from Out.
type TypedHandler[In, Out any] func(ctx context.Context, call *Call, in In) (Out, error)

// AddTool registers a typed tool. The input schema is inferred from In (a
// struct with json and jsonschema tags) and the output schema from Out when
// Out is a struct, on the tool's first listing or call (a schema that
// cannot be inferred fails it then, and catalog.Catalog.Check in tests).
// Arguments are validated against the schema (which rejects unknown and
// duplicate members) before they are decoded.
func AddTool[In, Out any](b *Builder, policy Policy, meta Meta, h TypedHandler[In, Out]) error {
	if t := reflect.TypeFor[In](); t.Kind() != reflect.Struct {
		return fmt.Errorf("kernel: tool %q: arguments of type %v, not a struct", policy.Name, t)
	}
	// A struct result is encoded through a pointer, which spares the
	// encoder a copy of the value to address it; only Out's own methods
	// (not those of *Out) make it a Texter, as in Encode. Pointers and
	// interfaces go to Encode as they are.
	ot := reflect.TypeFor[Out]()
	direct := ot.Kind() == reflect.Pointer || ot.Kind() == reflect.Interface
	texter := ot.Implements(reflect.TypeFor[Texter]())
	return b.register(policy, meta, catalog.Entry{Infer: inferSchemas[In, Out]}, func(ctx context.Context, call *Call) (*Result, error) {
		// The kernel validated the arguments against In's schema (no unknown
		// or duplicate members) before this runs.
		var args In
		if err := jsonv2.Unmarshal(call.Args, &args); err != nil {
			return nil, fault.New(fault.InvalidInput, "tool %s: %s", call.Tool.Name, err.Error())
		}
		v, err := h(ctx, call, args)
		if err != nil {
			return nil, err
		}
		switch {
		case direct:
			return Encode(v)
		case texter:
			return encode(&v, any(&v).(Texter))
		}
		return encode(&v, nil)
	})
}

// inferSchemas infers the schemas of a typed tool taking In and returning
// Out.
func inferSchemas[In, Out any]() (in, out *jsonschema.Schema, err error) {
	if in, err = jsonschema.For[In](schemaOpts); err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	if t := reflect.TypeFor[Out](); t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		if out, err = jsonschema.For[Out](schemaOpts); err != nil {
			return nil, nil, fmt.Errorf("output schema: %w", err)
		}
	}
	return in, out, nil
}

// schemaOpts infer the schemas of typed tools. Encoded JSON values
// (jsontext.Value, json.RawMessage) are any JSON value: inferred as Go
// types they would be byte slices (an array of numbers, or null), a schema
// that clients checking results against it reject for every value.
var schemaOpts = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[jsontext.Value]():  {Description: "any JSON value"},
	reflect.TypeFor[json.RawMessage](): {Description: "any JSON value"},
}}

// Encode turns a typed value into a Result: structured content is its JSON
// encoding; the text is its ToolText when it is a Texter, else the same JSON.
func Encode(v any) (*Result, error) {
	t, _ := v.(Texter)
	return encode(v, t)
}

// encodeOpts are Encode's options, joined once.
var encodeOpts = jsonv2.JoinOptions(jsonv2.Deterministic(true))

// encode encodes v; the text is t's, or the encoding when t is nil. A
// Releaser's Release goes with the result (and runs at once if encoding
// fails).
func encode(v any, t Texter) (*Result, error) {
	data, err := jsonv2.Marshal(v, encodeOpts)
	r, releases := t.(Releaser)
	if err != nil {
		if releases {
			r.Release()
		}
		return nil, fault.Wrap(fault.Internal, err, "encoding the result failed")
	}
	res := &Result{Structured: json.RawMessage(data)}
	attachImage(res, v)
	if t != nil {
		res.Text = t.ToolText()
		if releases {
			res.release = r.Release
		}
	} else {
		res.Text = string(data)
	}
	return res, nil
}
