package limits

// A provider's tool call, as `capkit call --from` reads it, carries the
// arguments inside an envelope: OpenAI's as a JSON string, where an
// escaped byte takes up to 6 (\u00XX). Standard input is read up to
// CallEnvelopeExpansion times the largest input bound of any tool, plus
// CallEnvelopeSlack for the envelope itself; the kernel then bounds the
// arguments by the called tool's own policy.
const (
	CallEnvelopeExpansion = 6
	CallEnvelopeSlack     = 64 * KiB
)

// GeminiInlinedNodes bounds the schema nodes a Gemini listing writes by
// inlining references (Gemini's parameters subset has none). A schema
// whose references fan out (each definition naming the next twice) would
// otherwise be written once per path: 2^n nodes for n definitions, from a
// few hundred bytes an upstream sends. Past it the schema is sent whole as
// parametersJsonSchema, which keeps its references, and the listing says
// so.
const GeminiInlinedNodes = 4096
