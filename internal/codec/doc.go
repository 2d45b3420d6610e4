// Package codec is acr's one format package: the canonical JSON everything
// is written and hashed in (byte-identical to Python's json.dumps with
// sort_keys, compact separators and ensure_ascii=False), the strict decoder
// for what people and programs hand acr (unknown, miscased or duplicate
// keys, floats, null where a typed field stands, trailing bytes: all
// refused, naming the field), content refs and fingerprints, and a walker
// over canonical bytes for verifying ledgers fast.
//
// It is pure: no file, no clock, no environment. Every package that hashes
// or stores an object goes through it, so that what was hashed is exactly
// what was written.
package codec
