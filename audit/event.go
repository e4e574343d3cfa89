package audit

import (
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/fault"
)

// The messages of the events a reader counts and shows apart.
const (
	// MsgCall is the kernel's event for every tool call.
	MsgCall = "call"
	// MsgLost is the event a sink logs when events could not be kept
	// (a spool that filled while a store was unreachable): Lost of them.
	MsgLost = "audit events lost"
)

// OutcomeOK is the outcome of a call that succeeded; any other outcome is
// a fault code.
const OutcomeOK = "ok"

// Event is one audit event: its canonical JSON, which is what a trail
// stores and hashes, and the members readers filter and count on.
type Event struct {
	Time    time.Time
	Msg     string
	Actor   string
	Session string
	Request string
	Tool    string
	// Outcome is "ok" or a fault code (calls).
	Outcome string
	// Policy names what decided a denial or a limit.
	Policy   string
	InBytes  int64
	OutBytes int64
	// DurationUS is the call's duration in microseconds.
	DurationUS int64
	// CallsLeft is the calls of the tool the session has left after this
	// one; -1 when the event does not say.
	CallsLeft int64
	// Lost counts the events a MsgLost event reports.
	Lost int64
	// JSON is the whole event in canonical form. A sink that keeps it
	// past Write copies it.
	JSON []byte
}

// Failed reports whether a call did not succeed.
func (e *Event) Failed() bool { return e.Msg == MsgCall && e.Outcome != OutcomeOK }

// Duration is the call's duration.
func (e *Event) Duration() time.Duration { return time.Duration(e.DurationUS) * time.Microsecond }

// wire is the members Decode reads.
type wire struct {
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	Actor      string    `json:"actor"`
	Session    string    `json:"session"`
	Request    string    `json:"request"`
	Tool       string    `json:"tool"`
	Outcome    string    `json:"outcome"`
	Policy     string    `json:"policy"`
	InBytes    int64     `json:"in_bytes"`
	OutBytes   int64     `json:"out_bytes"`
	DurationUS int64     `json:"duration_us"`
	CallsLeft  *int64    `json:"calls_left"`
	Lost       int64     `json:"lost"`
}

// Decode reads an event from its JSON (a trail's record, a store's row);
// data is kept as the event's JSON, not copied. Members it does not know
// are left in the JSON; a member of the wrong type fails (integrity: the
// trail was not written by capkit).
func Decode(data []byte) (*Event, error) {
	e := &Event{}
	if decodeCanonical(data, e) {
		return e, nil
	}
	return decodeJSON(data)
}

// decodeJSON is Decode by the JSON package, for any event.
func decodeJSON(data []byte) (*Event, error) {
	var w wire
	if err := jsonv2.Unmarshal(data, &w, jsonv2.RejectUnknownMembers(false)); err != nil {
		return nil, fault.Wrap(fault.Integrity, err, "an audit event does not decode")
	}
	e := &Event{Time: w.Time, Msg: w.Msg, Actor: w.Actor, Session: w.Session, Request: w.Request, Tool: w.Tool,
		Outcome: w.Outcome, Policy: w.Policy, InBytes: w.InBytes, OutBytes: w.OutBytes, DurationUS: w.DurationUS,
		CallsLeft: -1, Lost: w.Lost, JSON: data}
	if w.CallsLeft != nil {
		e.CallsLeft = *w.CallsLeft
	}
	return e, nil
}
