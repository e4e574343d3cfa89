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
