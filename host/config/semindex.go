package config

import (
	"encoding/hex"
	"strings"
)

// SemindexConfig names the model of the semantic index tools (effects
// index_read and index_write).
//
//	[semindex]
//	model = "/opt/models/all-MiniLM-L6-v2"  # config.json, tokenizer.json, model.safetensors
//	pin = "53aa…"                           # optional: SHA-256 of model.safetensors
//
// The model is loaded on first use, never downloaded. Without model the
// semantic index tools are not offered (the host's log says why); with
// files missing, they fail with "unavailable" and say how to get them. pin defaults to the published all-MiniLM-L6-v2 digest; pinning
// another accepts another BERT model of the same layout.
type SemindexConfig struct {
	Model string `toml:"model"`
	Pin   string `toml:"pin"`
}

// validateSemindex makes the model directory absolute and checks the pin.
func (c *Config) validateSemindex(errs *errorList) {
	s := &c.Semindex
	if s.Pin != "" {
		if b, err := hex.DecodeString(s.Pin); err != nil || len(b) != 32 {
			errs.add(c.Errorf("semindex.pin", "%q is not a SHA-256 in hex (64 digits)", s.Pin))
		}
		s.Pin = strings.ToLower(s.Pin)
	}
	if s.Model == "" {
		return
	}
	abs, err := c.abs(s.Model)
	if err != nil {
		errs.add(c.Errorf("semindex.model", "%v", err))
		return
	}
	s.Model = abs
}
