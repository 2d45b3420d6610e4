package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON value kinds. KindInvalid is the zero value so that an
// uninitialised Value is never mistaken for null.
const (
	KindInvalid Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

// Value is a parsed JSON document. Numbers are integers only and are kept
// as their decimal literal, so arbitrarily large integers survive a round
// trip exactly as Python's int would.
type Value struct {
	Kind   Kind
	Bool   bool
	Str    string // string contents, or the integer literal for KindNumber
	Arr    []Value
	Obj    []Member // sorted by Key, no duplicates
	offset int      // byte offset where the value started, for error messages
}

// Member is one key/value pair of a JSON object.
type Member struct {
	Key string
	Val Value
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 256

// SyntaxError reports malformed or non-canonical JSON with the byte offset
// at which the problem was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Parse parses one JSON document with strict semantics but free formatting:
// whitespace is allowed, while duplicate keys, non-integer numbers, invalid
// UTF-8, lone surrogates and trailing bytes are rejected. Use it for
// documents people write (goal, contract, environment).
func Parse(data []byte) (Value, error) {
	return parse(data, false)
}

// ParseCanonical parses a document that must already be in canonical form:
// no whitespace, keys strictly sorted, only the escapes Python's json.dumps
// produces. Anything it accepts re-encodes to exactly the same bytes.
func ParseCanonical(data []byte) (Value, error) {
	return parse(data, true)
}

func parse(data []byte, canonical bool) (Value, error) {
	p := parser{data: data, canonical: canonical}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Value{}, p.errorf("trailing data after the JSON value")
	}
	return v, nil
}

type parser struct {
	data      []byte
	pos       int
	canonical bool
}

func (p *parser) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	if p.canonical {
		return
	}
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, p.errorf("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.data) {
		return Value{}, p.errorf("unexpected end of input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		return Value{Kind: KindString, Str: s, offset: start}, err
	case c == 't':
		return p.literal("true", Value{Kind: KindBool, Bool: true, offset: start})
	case c == 'f':
		return p.literal("false", Value{Kind: KindBool, offset: start})
	case c == 'n':
		return p.literal("null", Value{Kind: KindNull, offset: start})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return Value{}, p.errorf("unexpected character %q", c)
	}
}

func (p *parser) literal(word string, v Value) (Value, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return Value{}, p.errorf("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *parser) number() (Value, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == digits {
		return Value{}, p.errorf("invalid number")
	}
	if p.data[digits] == '0' && p.pos-digits > 1 {
		return Value{}, &SyntaxError{Offset: digits, Msg: "number with a leading zero"}
	}
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '.', 'e', 'E':
			return Value{}, &SyntaxError{Offset: start, Msg: "non-integer number: only integers are allowed in acr documents"}
		}
	}
	lit := string(p.data[start:p.pos])
	if lit == "-0" && p.canonical {
		return Value{}, &SyntaxError{Offset: start, Msg: "non-canonical number -0"}
	}
	return Value{Kind: KindNumber, Str: lit, offset: start}, nil
}

func (p *parser) array(depth int) (Value, error) {
	v := Value{Kind: KindArray, offset: p.pos}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		elem, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.Arr = append(v.Arr, elem)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return Value{}, p.errorf("expected ',' or ']' in array")
		}
	}
}

func (p *parser) object(depth int) (Value, error) {
	v := Value{Kind: KindObject, offset: p.pos}
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.errorf("expected a string object key")
		}
		keyAt := p.pos
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		if p.canonical && len(v.Obj) > 0 && v.Obj[len(v.Obj)-1].Key >= key {
			return Value{}, &SyntaxError{Offset: keyAt, Msg: fmt.Sprintf("key %q is not in sorted order or is duplicated", key)}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.errorf("expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		v.Obj = append(v.Obj, Member{Key: key, Val: val})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.errorf("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if !p.canonical {
				if err := sortMembers(v.Obj); err != nil {
					return Value{}, &SyntaxError{Offset: v.offset, Msg: err.Error()}
				}
			}
			return v, nil
		default:
			return Value{}, p.errorf("expected ',' or '}' in object")
		}
	}
}

// sortMembers orders members by key as Python's sort_keys does (code point
// order, which for UTF-8 is byte order) and rejects duplicates: a document
// with two values for one key could show a validator one value and a
// consumer the other.
func sortMembers(ms []Member) error {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Key < ms[j].Key })
	for i := 1; i < len(ms); i++ {
		if ms[i].Key == ms[i-1].Key {
			return fmt.Errorf("duplicate key %q", ms[i].Key)
		}
	}
	return nil
}

// str parses a string token starting at the opening quote.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	var b []byte
	runStart := p.pos
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			b = append(b, p.data[runStart:p.pos]...)
			p.pos++
			return string(b), nil
		case c == '\\':
			b = append(b, p.data[runStart:p.pos]...)
			r, err := p.escape()
			if err != nil {
				return "", err
			}
			b = utf8.AppendRune(b, r)
			runStart = p.pos
		case c < 0x20:
			return "", p.errorf("raw control character in string")
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf("invalid UTF-8")
			}
			p.pos += size
		}
	}
}

// escape parses one backslash escape and returns the rune it denotes.
func (p *parser) escape() (rune, error) {
	at := p.pos
	if p.pos+1 >= len(p.data) {
		return 0, p.errorf("unterminated escape")
	}
	c := p.data[p.pos+1]
	p.pos += 2
	var r rune
	switch c {
	case '"':
		r = '"'
	case '\\':
		r = '\\'
	case '/':
		r = '/'
	case 'b':
		r = '\b'
	case 'f':
		r = '\f'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 't':
		r = '\t'
	case 'u':
		u, err := p.hex4(at)
		if err != nil {
			return 0, err
		}
		r = u
		if u >= 0xD800 && u <= 0xDBFF {
			if p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
				return 0, &SyntaxError{Offset: at, Msg: "lone surrogate in \\u escape"}
			}
			p.pos += 2
			lo, err := p.hex4(at)
			if err != nil {
				return 0, err
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return 0, &SyntaxError{Offset: at, Msg: "lone surrogate in \\u escape"}
			}
			r = 0x10000 + (u-0xD800)<<10 + (lo - 0xDC00)
		} else if u >= 0xDC00 && u <= 0xDFFF {
			return 0, &SyntaxError{Offset: at, Msg: "lone surrogate in \\u escape"}
		}
	default:
		return 0, &SyntaxError{Offset: at, Msg: fmt.Sprintf("invalid escape \\%c", c)}
	}
	if p.canonical && !bytes.Equal(p.data[at:p.pos], appendEscapedRune(nil, r)) {
		return 0, &SyntaxError{Offset: at, Msg: "non-canonical escape"}
	}
	return r, nil
}

func (p *parser) hex4(at int) (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, &SyntaxError{Offset: at, Msg: "short \\u escape"}
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, &SyntaxError{Offset: at, Msg: "invalid \\u escape"}
	}
	p.pos += 4
	return rune(n), nil
}

// AppendEncode appends the canonical encoding of v to buf. The bytes equal
// Python's json.dumps(v, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False).
func AppendEncode(buf []byte, v Value) []byte {
	switch v.Kind {
	case KindNull, KindInvalid:
		return append(buf, "null"...)
	case KindBool:
		if v.Bool {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case KindNumber:
		if v.Str == "-0" {
			return append(buf, '0')
		}
		return append(buf, v.Str...)
	case KindString:
		return appendString(buf, v.Str)
	case KindArray:
		buf = append(buf, '[')
		for i, e := range v.Arr {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendEncode(buf, e)
		}
		return append(buf, ']')
	default: // KindObject
		buf = append(buf, '{')
		for i, m := range v.Obj {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, m.Key)
			buf = append(buf, ':')
			buf = AppendEncode(buf, m.Val)
		}
		return append(buf, '}')
	}
}

// Encode returns the canonical encoding of v.
func (v Value) Encode() []byte { return AppendEncode(nil, v) }

func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		buf = appendEscapedRune(buf, rune(c))
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// appendEscapedRune appends r the way Python's json module writes it with
// ensure_ascii=False: short escapes for the usual characters, \u00xx in
// lower-case hex for other control characters, everything else raw
// (including U+2028 and U+2029, which Go's encoder would escape).
func appendEscapedRune(buf []byte, r rune) []byte {
	switch r {
	case '"':
		return append(buf, '\\', '"')
	case '\\':
		return append(buf, '\\', '\\')
	case '\n':
		return append(buf, '\\', 'n')
	case '\r':
		return append(buf, '\\', 'r')
	case '\t':
		return append(buf, '\\', 't')
	case '\b':
		return append(buf, '\\', 'b')
	case '\f':
		return append(buf, '\\', 'f')
	}
	if r < 0x20 {
		const hex = "0123456789abcdef"
		return append(buf, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
	}
	return utf8.AppendRune(buf, r)
}

// Marshal returns the canonical JSON encoding of v. It is the one encoder
// for everything acr writes or hashes. It walks v directly; for types it
// has no fast path for it falls back to MarshalViaJSON, the reference
// implementation, whose bytes it must equal (tested). A float anywhere in v
// is an error: floats are kept out of hashed state.
func Marshal(v any) ([]byte, error) {
	if val, ok := v.(Value); ok {
		return val.Encode(), nil
	}
	s, err := encodeScratch(v)
	if err == nil {
		// One allocation of the exact size: the scratch buffer took the
		// growth (growing a fresh buffer by doubling was a third of all
		// the bytes a cycle allocated).
		b := bytes.Clone(s.b)
		s.release()
		return b, nil
	}
	var slow errSlowPath
	if !errors.As(err, &slow) {
		return nil, err
	}
	return MarshalViaJSON(v)
}

// MarshalViaJSON is the reference canonical encoder: encoding/json does the
// reflection, and the result is re-parsed and re-emitted so that key
// order, string escaping and number form follow the canonical rules.
func MarshalViaJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical encode: %w", err)
	}
	val, err := Parse(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("canonical encode: %w", err)
	}
	return val.Encode(), nil
}

// MustMarshal is Marshal for values whose types cannot fail to encode
// (no floats, no channels, no unsupported maps). It panics otherwise,
// which signals a programming error rather than bad input.
func MustMarshal(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// ErrNotCanonical reports a stored document whose bytes are not in
// canonical form.
var ErrNotCanonical = errors.New("document is not canonical JSON")

// MarshalJSON lets a Value sit inside Go structs; it emits canonical bytes.
func (v Value) MarshalJSON() ([]byte, error) { return v.Encode(), nil }

// UnmarshalJSON parses with the same strict rules as Parse.
func (v *Value) UnmarshalJSON(data []byte) error {
	val, err := Parse(data)
	if err != nil {
		return err
	}
	*v = val
	return nil
}
