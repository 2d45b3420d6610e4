package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// WalkCanonical checks that b is exactly one JSON document in canonical
// form, accepting precisely what ParseCanonical accepts (fuzz-tested), but
// without building a Value: it allocates nothing and runs at close to memory
// speed, which is what lets `acr ledger verify` check every byte of a long
// history at a rate comparable to hashing it.
//
// For every value nested at most visitDepth levels below the root (1: the
// root's members or elements), visit is called after that value has been
// checked, with the raw bytes of its key as they appear between the quotes
// (nil for an array element) and the raw bytes of the value. Calls come in
// document order of the values' ends, so a container's children are
// visited before the container. visit may be nil; an error it returns stops
// the walk and is returned as it is.
func WalkCanonical(b []byte, visitDepth int, visit func(depth int, key, val []byte) error) error {
	w := walker{data: b, visitDepth: visitDepth, visit: visit}
	if visit == nil {
		w.visitDepth = -1
	}
	if err := w.value(0); err != nil {
		return err
	}
	if w.pos != len(w.data) {
		return w.errorf("trailing data after the JSON value")
	}
	return nil
}

type walker struct {
	data       []byte
	pos        int
	visitDepth int
	visit      func(depth int, key, val []byte) error
}

func (w *walker) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: w.pos, Msg: fmt.Sprintf(format, args...)}
}

func (w *walker) value(depth int) error {
	if depth > maxDepth {
		return w.errorf("nesting deeper than %d", maxDepth)
	}
	if w.pos >= len(w.data) {
		return w.errorf("unexpected end of input")
	}
	switch c := w.data[w.pos]; {
	case c == '{':
		return w.object(depth)
	case c == '[':
		return w.array(depth)
	case c == '"':
		return w.str()
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return w.number()
	default:
		return w.errorf("unexpected character %q", c)
	}
}

func (w *walker) literal(word string) error {
	if !bytes.HasPrefix(w.data[w.pos:], []byte(word)) {
		return w.errorf("invalid literal")
	}
	w.pos += len(word)
	return nil
}

func (w *walker) number() error {
	start := w.pos
	if w.data[w.pos] == '-' {
		w.pos++
	}
	digits := w.pos
	for w.pos < len(w.data) && w.data[w.pos] >= '0' && w.data[w.pos] <= '9' {
		w.pos++
	}
	if w.pos == digits {
		return w.errorf("invalid number")
	}
	if w.data[digits] == '0' && w.pos-digits > 1 {
		return &SyntaxError{Offset: digits, Msg: "number with a leading zero"}
	}
	if w.pos < len(w.data) {
		switch w.data[w.pos] {
		case '.', 'e', 'E':
			return &SyntaxError{Offset: start, Msg: "non-integer number: only integers are allowed in acr documents"}
		}
	}
	if w.pos-start == 2 && w.data[start] == '-' && w.data[digits] == '0' {
		return &SyntaxError{Offset: start, Msg: "non-canonical number -0"}
	}
	return nil
}

func (w *walker) array(depth int) error {
	w.pos++ // '['
	if w.pos < len(w.data) && w.data[w.pos] == ']' {
		w.pos++
		return nil
	}
	for {
		start := w.pos
		if err := w.value(depth + 1); err != nil {
			return err
		}
		if depth < w.visitDepth {
			if err := w.visit(depth+1, nil, w.data[start:w.pos]); err != nil {
				return err
			}
		}
		if w.pos >= len(w.data) {
			return w.errorf("unterminated array")
		}
		switch w.data[w.pos] {
		case ',':
			w.pos++
		case ']':
			w.pos++
			return nil
		default:
			return w.errorf("expected ',' or ']' in array")
		}
	}
}

func (w *walker) object(depth int) error {
	w.pos++ // '{'
	if w.pos < len(w.data) && w.data[w.pos] == '}' {
		w.pos++
		return nil
	}
	var prev []byte
	for {
		if w.pos >= len(w.data) || w.data[w.pos] != '"' {
			return w.errorf("expected a string object key")
		}
		keyAt := w.pos
		if err := w.str(); err != nil {
			return err
		}
		key := w.data[keyAt+1 : w.pos-1]
		if prev != nil && !keyLess(prev, key) {
			return &SyntaxError{Offset: keyAt, Msg: fmt.Sprintf("key %q is not in sorted order or is duplicated", unescapeKey(key))}
		}
		prev = key
		if w.pos >= len(w.data) || w.data[w.pos] != ':' {
			return w.errorf("expected ':' after object key")
		}
		w.pos++
		start := w.pos
		if err := w.value(depth + 1); err != nil {
			return err
		}
		if depth < w.visitDepth {
			if err := w.visit(depth+1, key, w.data[start:w.pos]); err != nil {
				return err
			}
		}
		if w.pos >= len(w.data) {
			return w.errorf("unterminated object")
		}
		switch w.data[w.pos] {
		case ',':
			w.pos++
		case '}':
			w.pos++
			return nil
		default:
			return w.errorf("expected ',' or '}' in object")
		}
	}
}

// keyLess orders raw (still escaped) keys by their decoded strings, which
// is the order Python's sort_keys uses. Escapes are rare in keys, so the
// common case compares the bytes as they are.
func keyLess(a, b []byte) bool {
	if bytes.IndexByte(a, '\\') < 0 && bytes.IndexByte(b, '\\') < 0 {
		return bytes.Compare(a, b) < 0
	}
	return unescapeKey(a) < unescapeKey(b)
}

// unescapeKey decodes the raw bytes of a string the walker has already
// checked, so every escape in it is one of the canonical ones.
func unescapeKey(raw []byte) string {
	v, err := ParseCanonical(append(append([]byte{'"'}, raw...), '"'))
	if err != nil {
		return string(raw)
	}
	return v.Str
}

// plainByte reports the ASCII bytes that stand for themselves inside a
// canonical string: everything from 0x20 to 0x7f except the quote and the
// backslash.
func plainByte(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }

// special8 reports whether any of the eight bytes packed in x is not a
// plain string byte: a control character, a quote, a backslash or a byte of
// a multi-byte UTF-8 sequence. It never misses one (a false alarm only
// sends the caller to the byte-by-byte path), and it lets long strings,
// most of a ledger's bytes, be skipped a word at a time.
func special8(x uint64) bool { return specialMask(x) != 0 }

// specialMask is special8 as a bit mask, so that two words can be tested
// with one branch.
func specialMask(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctrl := (x - ones*0x20) & ^x & highs
	q := x ^ (ones * '"')
	quote := (q - ones) & ^q & highs
	b := x ^ (ones * '\\')
	backslash := (b - ones) & ^b & highs
	return ctrl | quote | backslash | x&highs
}

// str checks a string token starting at its opening quote. Canonical
// strings hold raw UTF-8 and only the escapes appendEscapedRune writes.
func (w *walker) str() error {
	w.pos++ // opening quote
	d := w.data
	for {
		for w.pos+16 <= len(d) && specialMask(binary.LittleEndian.Uint64(d[w.pos:]))|specialMask(binary.LittleEndian.Uint64(d[w.pos+8:])) == 0 {
			w.pos += 16
		}
		for w.pos+8 <= len(d) && !special8(binary.LittleEndian.Uint64(d[w.pos:])) {
			w.pos += 8
		}
		for w.pos < len(d) && plainByte(d[w.pos]) {
			w.pos++
		}
		if w.pos >= len(d) {
			return w.errorf("unterminated string")
		}
		switch c := d[w.pos]; {
		case c == '"':
			w.pos++
			return nil
		case c == '\\':
			if err := w.escape(); err != nil {
				return err
			}
		case c < 0x20:
			return w.errorf("raw control character in string")
		default:
			r, size := utf8.DecodeRune(d[w.pos:])
			if r == utf8.RuneError && size <= 1 {
				return w.errorf("invalid UTF-8")
			}
			w.pos += size
		}
	}
}

// escape checks one escape: \" \\ \n \r \t \b \f, or \u00xx in lower-case
// hex for the other control characters.
func (w *walker) escape() error {
	at := w.pos
	d := w.data
	if w.pos+1 >= len(d) {
		return w.errorf("unterminated escape")
	}
	switch d[w.pos+1] {
	case '"', '\\', 'n', 'r', 't', 'b', 'f':
		w.pos += 2
		return nil
	case 'u':
		if w.pos+6 > len(d) {
			return &SyntaxError{Offset: at, Msg: "short \\u escape"}
		}
		h := d[w.pos+2 : w.pos+6]
		if h[0] == '0' && h[1] == '0' && (h[2] == '0' || h[2] == '1') && lowerHex(h[3]) {
			switch r := (h[2]-'0')<<4 | hexVal(h[3]); r {
			case '\n', '\r', '\t', '\b', '\f':
			default:
				w.pos += 6
				return nil
			}
		}
		return &SyntaxError{Offset: at, Msg: "non-canonical escape"}
	case '/':
		return &SyntaxError{Offset: at, Msg: "non-canonical escape"}
	default:
		return &SyntaxError{Offset: at, Msg: fmt.Sprintf("invalid escape \\%c", d[w.pos+1])}
	}
}

func lowerHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
