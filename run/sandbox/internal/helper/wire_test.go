package helper

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func sampleMessage() *Message {
	return &Message{
		Full: true, Network: true, Tmp: "/tmp/capkit-run-1",
		View: &View{
			Writable: []string{"/work/a", "/work/b"}, ReadOnly: []string{"/opt/x"}, Protected: []string{"/work/a/.git"},
			Limits: Limits{MemoryBytes: 1 << 30, Processes: 301, FileBytes: 1 << 20, OpenFiles: 64, TmpBytes: 8 << 20, CPUSeconds: 600, MilliCPUs: -1},
		},
		Seccomp: []byte{0x20, 0, 0, 0, 4, 0, 0, 0},
	}
}

// TestWireRoundTrip: a message and a call read back as written, one
// after the other from one stream, as the helper reads them.
func TestWireRoundTrip(t *testing.T) {
	m := sampleMessage()
	c := &Call{Argv: []string{"sh", "-c", "echo \x00 é"}, Dir: "/work/a", Env: []string{"PATH=/usr/bin"}, NullStdin: true}
	r := bytes.NewReader(append(m.Encode(), c.Encode()...))
	gm, err := DecodeMessage(r, 1<<20)
	if err != nil || !reflect.DeepEqual(gm, m) {
		t.Fatalf("message: %v\n got %+v %+v\nwant %+v %+v", err, gm, gm.View, m, m.View)
	}
	gc, err := DecodeCall(r, 1<<20)
	if err != nil || !reflect.DeepEqual(gc, c) {
		t.Fatalf("call: %v\n got %+v\nwant %+v", err, gc, c)
	}
}

// TestWireRefusals: truncated, oversized, trailing and malformed frames
// fail.
func TestWireRefusals(t *testing.T) {
	good := sampleMessage().Encode()
	for _, tc := range []struct {
		name string
		b    []byte
		max  int
	}{
		{"empty", nil, 1 << 20},
		{"truncated", good[:len(good)-1], 1 << 20},
		{"one past the bound", good, len(good) - 2},
		{"trailing byte", append([]byte{byte(len(good))}, append(good[1:], 0)...), 1 << 20},
		{"list count past the frame", []byte{3, 0, 0, 0x7f}, 1 << 20},
		{"string past the frame", []byte{3, 0, 9, 'a'}, 1 << 20},
		{"endless varint", bytes.Repeat([]byte{0xff}, 12), 1 << 20},
	} {
		if _, err := DecodeMessage(bytes.NewReader(tc.b), tc.max); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	// At the bound: accepted.
	if _, err := DecodeMessage(bytes.NewReader(good), len(good)-2); err == nil {
		t.Fatal("the sample's frame is 2 bytes of length and more")
	}
	if _, err := DecodeMessage(bytes.NewReader(good), len(good)-1); err != nil {
		t.Errorf("a frame at the bound: %v", err)
	}
}

// FuzzDecodeMessage: any input decodes or fails without panicking, and
// what decodes encodes back to the same frame.
func FuzzDecodeMessage(f *testing.F) {
	f.Add(sampleMessage().Encode())
	f.Add([]byte{0})
	f.Add([]byte{3, 0, 0, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMessage(bytes.NewReader(b), 1<<16)
		if err != nil {
			return
		}
		again, err := DecodeMessage(bytes.NewReader(m.Encode()), 1<<16)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoded %+v: %v %+v", m, err, again)
		}
	})
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ p, parent string }{{"/a/b/c", "/a/b"}, {"/a", "/"}, {"/", "/"}} {
		if got := parent(tc.p); got != tc.parent {
			t.Errorf("parent(%q) = %q, want %q", tc.p, got, tc.parent)
		}
	}
	if join("/", "x") != "/x" || join("/a", "x") != "/a/x" {
		t.Error("join")
	}
	for _, tc := range []struct {
		root, p string
		want    bool
	}{{"/a", "/a", true}, {"/a", "/a/b", true}, {"/a", "/ab", false}, {"/", "/x", true}, {"/a/b", "/a", false}} {
		if within(tc.root, tc.p) != tc.want {
			t.Errorf("within(%q, %q) != %v", tc.root, tc.p, tc.want)
		}
	}
	if got := strings.Join(splitList("/usr/bin::/bin:"), "|"); got != "/usr/bin||/bin|" {
		t.Errorf("splitList = %q", got)
	}
}

func TestProxyAddr(t *testing.T) {
	if ProxyAddr != "127.0.0.1:"+strconv.Itoa(ProxyPort) {
		t.Errorf("ProxyAddr %s is not port %d on loopback", ProxyAddr, ProxyPort)
	}
}
