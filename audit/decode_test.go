package audit

import (
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// decodeSeeds are events as the encoder writes them, and near misses of
// that form the fast path must decline or read as the JSON package does.
var decodeSeeds = []string{
	`{"actor":"assistant","calls_left":9321,"duration_us":87,"in_bytes":52,"level":"INFO","msg":"call","out_bytes":4096,"outcome":"ok","request":"1234","session":"3f2a9c1e0b7d4a65","shape":{"path":"string:42"},"time":"2026-12-02T18:00:00.123456789Z","tool":"read_file"}`,
	`{"msg":"audit events lost","lost":3,"time":"2026-12-02T18:00:00Z"}`,
	`{"a":[1,-0.5e+3,true,false,null,{"b":{},"c":[]}],"msg":"x"}`,
	`{}`,
	`{"msg":"x","msg":"y"}`,
	`{"msg":"b","actor":"a"}`,
	`{"Actor":"a","actor":"b"}`,
	`{"actor":"\u00e9\"x"}`,
	`{"actor":"é"}`,
	`{"actor":"\xff"}`,
	`{"in_bytes":9223372036854775807,"out_bytes":-9223372036854775808}`,
	`{"in_bytes":9223372036854775808}`,
	`{"in_bytes":1.0}`,
	`{"in_bytes":-0}`,
	`{"in_bytes":01}`,
	`{"in_bytes":"1"}`,
	`{"calls_left":null}`,
	`{"time":"2026-12-02T18:00:00+01:00"}`,
	`{"time":"2026-12-02T24:00:00Z"}`,
	`{"time":"2026-02-30T18:00:00Z"}`,
	`{"time":"2026-12-02T18:00:00.Z"}`,
	`{"time":"2026-12-02T18:00:00.1234567890Z"}`,
	`{"time":null}`,
	`{"x":{"a":1,"a":2}}`,
	` {"msg":"x"}`,
	`{"msg":"x"} `,
	`{"msg":"x"}x`,
	`{"msg":tru}`,
	`{"n":1e}`,
	`[]`,
	``,
}

// FuzzDecode: whatever the fast path reads, the JSON package reads as
// the same event; whatever it declines, Decode reads as the JSON package
// does.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\"actor\":\"\xff\"}"))
	f.Add(Encode(callRecord()).JSON)
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := decodeJSON(data)
		var fast Event
		if decodeCanonical(data, &fast) {
			if werr != nil {
				t.Fatalf("the fast path read %q, the JSON package did not: %v", data, werr)
			}
			if !reflect.DeepEqual(&fast, want) {
				t.Fatalf("%q: the fast path read\n%+v\nthe JSON package\n%+v", data, fast, *want)
			}
		}
		got, gerr := Decode(data)
		if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Decode %+v, %v; the JSON package %+v, %v", data, got, gerr, want, werr)
		}
	})
}

// TestDecodeTakesTheFastPath: the encoder's events are read by the fast
// path, so the exporter and the readers do not pay for the JSON package.
func TestDecodeTakesTheFastPath(t *testing.T) {
	r := callRecord()
	r.AddAttrs(slog.Group("containment", slog.Bool("network", false), slog.Float64("cpu_s", 0.25)), slog.Any("list", []int{1, 2}))
	for _, e := range []*Event{Encode(r), Encode(slog.NewRecord(time.Now(), slog.LevelInfo, MsgLost, 0))} {
		var fast Event
		if !decodeCanonical(e.JSON, &fast) {
			t.Fatalf("declined %s", e.JSON)
		}
	}
	for _, s := range []string{`{"msg":"b","actor":"a"}`, `{"actor":"\"q\""}`, `{"in_bytes":1.5}`, `{"msg": "x"}`} {
		var fast Event
		if decodeCanonical([]byte(s), &fast) {
			t.Errorf("read %s", s)
		}
	}
}

// BenchmarkDecode: a read_file call's event, as capkit-otel and the
// readers decode it (Decode), and by the JSON package alone.
func BenchmarkDecode(b *testing.B) {
	data := Encode(callRecord()).JSON
	for _, bm := range []struct {
		name   string
		decode func([]byte) (*Event, error)
	}{{"Decode", Decode}, {"JSON", decodeJSON}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bm.decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeReadsEveryMember: an event holding every member Decode reads
// (wire's names) is read by the fast path as by the JSON package, each
// member set, so a member added to wire and not to the fast path fails
// here, whatever the fuzz corpus holds.
func TestDecodeReadsEveryMember(t *testing.T) {
	members := map[string]string{}
	wt := reflect.TypeFor[wire]()
	for i := range wt.NumField() {
		f := wt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type {
		case reflect.TypeFor[string]():
			members[name] = `"v-` + name + `"`
		case reflect.TypeFor[int64](), reflect.TypeFor[*int64]():
			members[name] = strconv.Itoa(100 + i)
		case reflect.TypeFor[time.Time]():
			members[name] = `"2026-12-02T18:00:00.5Z"`
		default:
			t.Fatalf("wire.%s: a type this test does not fill: %v", f.Name, f.Type)
		}
	}
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(members)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + name + `":` + members[name])
	}
	data := []byte("{" + b.String() + "}")
	want, err := decodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var fast Event
	if !decodeCanonical(data, &fast) || !reflect.DeepEqual(&fast, want) {
		t.Fatalf("%s: the fast path read\n%+v\nthe JSON package\n%+v", data, fast, *want)
	}
	v := reflect.ValueOf(fast)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("Event.%s is not set from %s", v.Type().Field(i).Name, data)
		}
	}
}
