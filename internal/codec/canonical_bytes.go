package codec

// Canonical holds bytes that are already canonical JSON: the body of a
// recorded object. The encoder writes them as they are instead of parsing
// and re-emitting them, so they are hashed and stored exactly as produced.
// Whoever builds a Canonical must guarantee the bytes are canonical (they
// come from Marshal, or were checked by ParseCanonical when read back), and
// nobody writes into them afterwards: they are shared, not copied, when a
// value holding them is copied (the kernel's state clone does so).
type Canonical []byte

// MarshalJSON returns the bytes unchanged.
func (c Canonical) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	return c, nil
}

// UnmarshalJSON keeps a copy of the bytes, in a new array: the bytes of a
// Canonical are never written in place, so copies of one may share them as
// they would share a string. Decoding a stored document with
// UnmarshalCanonical has already checked that they are canonical.
func (c *Canonical) UnmarshalJSON(b []byte) error {
	*c = append(Canonical(nil), b...)
	return nil
}
