// Package toolrules holds the providers' published rules for tool
// definitions, as tests check capkit's renderings against them
// (serve/hostloop), each rule with the page that states it, and a
// generator of arguments, valid and not, from an input schema. It reads
// the definitions as plain JSON, apart from the code that makes them. It
// is imported only by _test.go files.
package toolrules
