package codec

// Canonical holds bytes that are already canonical JSON: the body of a
// recorded object. The encoder writes them as they are instead of parsing
// and re-emitting them, so they are hashed and stored exactly as produced.
// Whoever builds a Canonical must guarantee the bytes are canonical (they
// come from Marshal, or were checked by ParseCanonical when read back).
type Canonical []byte

// MarshalJSON returns the bytes unchanged.
func (c Canonical) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	return c, nil
}

// UnmarshalJSON keeps a copy of the bytes. Decoding a stored document with
// UnmarshalCanonical has already checked that they are canonical.
func (c *Canonical) UnmarshalJSON(b []byte) error {
	*c = append((*c)[:0], b...)
	return nil
}
