package mcpserver

import (
	"errors"
	"fmt"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// errBadID is why a message whose id cannot be echoed exactly is refused.
// The SDK holds an id as an int64 or a string: 1.5 would come back as 1,
// and 1e300 or 2^63 as -2^63, so that distinct requests would collide.
// JSON-RPC answers such a request with an error whose id is null.
var errBadID = errors.New("id must be a string or an integer from -(2^53-1) to 2^53-1 written without fraction or exponent; null is not an id (omit it for a notification)")

// maxSafeID is the largest integer id: every JSON peer (JavaScript's
// numbers included) and the SDK's id (made from a float64) hold it exactly.
const maxSafeID = 1<<53 - 1

// parseID reads a message's id as sent. An absent id is the zero ID (a
// notification); any id that would not be echoed byte for byte is
// errBadID.
func parseID(raw jsontext.Value) (jsonrpc.ID, error) {
	if len(raw) == 0 {
		return jsonrpc.ID{}, nil
	}
	switch raw.Kind() {
	case '"':
		var s string
		if err := jsonv2.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, errBadID
		}
		return jsonrpc.MakeID(s)
	case '0':
		if !plainInteger(raw) {
			return jsonrpc.ID{}, errBadID
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			return jsonrpc.ID{}, errBadID
		}
		return jsonrpc.MakeID(float64(n))
	}
	return jsonrpc.ID{}, errBadID
}

// plainInteger reports whether a JSON number is written as an integer
// that strconv.AppendInt writes back the same: no fraction, no exponent,
// no leading zero, no "-0".
func plainInteger(v []byte) bool {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && (len(digits) > 1 || len(v) != len(digits))) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// nullIDError encodes the error response to a message whose id is unknown
// (it could not be read) or refused: "id" is null, as JSON-RPC 2.0 §5
// requires. The SDK's encoder leaves a zero id out instead.
func nullIDError(code int64, message string) []byte {
	data, err := jsonv2.Marshal(struct {
		Version string         `json:"jsonrpc"`
		ID      jsontext.Value `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", jsontext.Value("null"), &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		// Only an invalid message (a string that is not UTF-8) gets here;
		// the message is ours, the code says enough.
		data = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"invalid message"}}`, code)
	}
	return data
}
