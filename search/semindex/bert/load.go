package bert

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// PublishedDigest is the SHA-256 of model.safetensors of
// sentence-transformers/all-MiniLM-L6-v2 as published (PublishedSize
// bytes). Load accepts only this file unless Options.Pin names another.
const (
	PublishedDigest = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
	PublishedSize   = 90_868_376
	PublishedName   = "sentence-transformers/all-MiniLM-L6-v2"
)

// The files of a model directory, in the sentence-transformers layout.
const (
	ConfigFile    = "config.json"
	TokenizerFile = "tokenizer.json"
	WeightsFile   = "model.safetensors"
	PoolingFile   = "1_Pooling/config.json"
)

// Options configure Load. A nil *Options is valid.
type Options struct {
	// Pin is the hex SHA-256 that model.safetensors must have; empty means
	// PublishedDigest. Pinning another digest accepts another BERT-family
	// model of the same layout; its outputs are then that model's.
	Pin string
	// Workers is how many goroutines one encoding uses; zero means
	// GOMAXPROCS (at most the number of CPUs).
	Workers int
}

// ErrModelMissing and ErrModelDigest are the causes of Load's unavailable
// and integrity failures, for errors.Is.
var (
	ErrModelMissing = fault.NewMark("model file missing")
	ErrModelDigest  = fault.NewMark("model digest mismatch")
)

// HowToGet says where the files come from and how to check them.
func HowToGet(pin string) string {
	if pin == "" || pin == PublishedDigest {
		return fmt.Sprintf("get %s, %s and %s (optionally also %s) of %s from its model repository on Hugging Face, put them in the model directory, and check that `sha256sum %s` prints %s (%d bytes)",
			ConfigFile, TokenizerFile, WeightsFile, PoolingFile, PublishedName, WeightsFile, PublishedDigest, PublishedSize)
	}
	return fmt.Sprintf("put %s, %s and %s of the pinned model in the model directory and check that `sha256sum %s` prints the pinned %s", ConfigFile, TokenizerFile, WeightsFile, WeightsFile, pin)
}

// Load reads a model directory: config.json and tokenizer.json are checked
// first, then model.safetensors is read whole, its SHA-256 compared with the
// pin, and every tensor checked against the configuration before it is
// converted. Missing files are unavailable; a digest that differs is
// integrity; malformed files are invalid_input.
func Load(ctx context.Context, dir string, opts *Options) (*Model, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	pin := strings.ToLower(o.Pin)
	if pin == "" {
		pin = PublishedDigest
	}
	if b, err := hex.DecodeString(pin); err != nil || len(b) != sha256.Size {
		return nil, fault.New(fault.InvalidInput, "pin %q is not a hex SHA-256 (64 hex digits)", clip.Text(o.Pin))
	}
	cfgData, err := readModelFile(dir, ConfigFile, limits.ModelMaxConfigBytes, pin)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(cfgData)
	if err != nil {
		return nil, err
	}
	tokData, err := readModelFile(dir, TokenizerFile, limits.ModelMaxTokenizerBytes, pin)
	if err != nil {
		return nil, err
	}
	tok, err := ParseTokenizer(tokData)
	if err != nil {
		return nil, err
	}
	if tok.VocabSize() > cfg.Vocab {
		return nil, fault.New(fault.InvalidInput, "tokenizer.json has ids up to %d but config.json's vocab_size is %d", tok.VocabSize()-1, cfg.Vocab)
	}
	if err := loadPooling(dir, cfg.Hidden); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fault.As(err)
	}
	weights, err := readModelFile(dir, WeightsFile, limits.ModelMaxWeightsBytes, pin)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(weights)
	if got := hex.EncodeToString(sum[:]); got != pin {
		return nil, fault.Wrap(fault.Integrity, ErrModelDigest,
			"%s has SHA-256 %s, not the pinned %s: the file is another or a damaged copy; %s", WeightsFile, got, pin, HowToGet(pin))
	}
	st, err := parseSafetensors(weights)
	if err != nil {
		return nil, err
	}
	m, err := newModel(cfg, tok, st, o.Workers)
	if err != nil {
		return nil, err
	}
	m.digest = pin
	return m, nil
}

func loadPooling(dir string, hidden int) error {
	data, err := readModelFile(dir, PoolingFile, limits.ModelMaxConfigBytes, "")
	if errors.Is(err, ErrModelMissing) {
		return nil // mean pooling, the published model's
	}
	if err != nil {
		return err
	}
	return checkPooling(data, hidden)
}

// readModelFile reads dir/name whole, refusing anything but a regular file
// of at most max bytes.
func readModelFile(dir, name string, max int64, pin string) ([]byte, error) {
	path := filepath.Join(dir, filepath.FromSlash(name))
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fault.Wrap(fault.Unavailable, ErrModelMissing.With(err),
			"the model is not installed: %s is missing from the model directory; %s", name, HowToGet(pin))
	}
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "opening %s of the model failed", name)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "reading %s of the model failed", name)
	}
	if !fi.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "%s of the model is not a regular file", name)
	}
	if fi.Size() > max {
		return nil, fault.LimitExceeded(name+" bytes", max, fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fault.Wrap(fault.IO, err, "reading %s of the model failed (did it change while being read?)", name)
	}
	return data, nil
}
