package codec

import (
	"encoding"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Marshal's encoder is compiled once per type: an encoderFunc that knows
// its type's shape (each struct field's encoded key, its index, its own
// encoder) instead of asking reflect and the type caches about every value
// it meets. It makes exactly the choices reflectValue (encode.go), the
// reflective encoder, makes for the same value, and returns the same bytes
// and errors: types with a custom encoding go to reflectValue itself, and
// anything reflectValue would hand to encoding/json (errSlowPath) is handed
// over the same way. TestCompiledMatchesReflective and
// FuzzCompiledEncoder hold the two to that.

// appendValue appends the canonical encoding of v (null for the zero
// Value) with v's compiled encoder. A nil buf starts with room for a
// typical record, which saves the first few doublings of a growing one.
func appendValue(buf []byte, v reflect.Value) ([]byte, error) {
	if !v.IsValid() {
		return append(buf, "null"...), nil
	}
	if buf == nil {
		buf = make([]byte, 0, 256)
	}
	return encoderOf(v.Type())(buf, v)
}

// encoderFunc appends the canonical encoding of v, a value of the type
// the function was compiled for.
type encoderFunc func(buf []byte, v reflect.Value) ([]byte, error)

// encoders caches the compiled encoder of each type. An entry is a pure
// function of its type, stored once and never replaced by a different
// function, so the cache cannot change any result; it only avoids
// compiling a type again.
var encoders sync.Map // reflect.Type -> encoderFunc

// encoderOf returns t's compiled encoder, compiling it on first use.
func encoderOf(t reflect.Type) encoderFunc {
	if f, ok := encoders.Load(t); ok {
		return f.(encoderFunc)
	}
	// A recursive type meets itself while it is being compiled: store a
	// stand-in first that waits for the real encoder (encoding/json does
	// the same), so that compiling terminates and a concurrent first use
	// of the type waits rather than compiling it twice.
	var (
		wg   sync.WaitGroup
		real encoderFunc
	)
	wg.Add(1)
	stand := encoderFunc(func(buf []byte, v reflect.Value) ([]byte, error) {
		wg.Wait()
		return real(buf, v)
	})
	if f, loaded := encoders.LoadOrStore(t, stand); loaded {
		return f.(encoderFunc)
	}
	real = compile(t)
	wg.Done()
	encoders.Store(t, real)
	return real
}

// compile builds t's encoder, following reflectValue and reflectPlain case
// by case.
func compile(t reflect.Type) encoderFunc {
	switch specialOf(t) {
	case plain:
	case isCanonical:
		return encodeCanonical
	case isTextMarshaler:
		return encodeTextMarshaler
	default: // Value, json.Number, json.RawMessage, json.Marshaler, slow
		return reflectValue
	}
	switch t.Kind() {
	case reflect.Pointer:
		return pointerEncoder(t)
	case reflect.Interface:
		return encodeInterface
	case reflect.String:
		return encodeString
	case reflect.Bool:
		return encodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return encodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return encodeUint
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return encodeByteSlice
		}
		if specialOf(t.Elem()) == isCanonical {
			return canonicalsEncoder(sequenceEncoder(t, true))
		}
		return sequenceEncoder(t, true)
	case reflect.Array:
		return sequenceEncoder(t, false)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return func(buf []byte, v reflect.Value) ([]byte, error) {
				if v.IsNil() {
					return append(buf, "null"...), nil
				}
				return nil, errSlowPath{t}
			}
		}
		return mapEncoder(t)
	case reflect.Struct:
		return structEncoder(t)
	}
	// Floats (an error) and kinds without a canonical form (the slow
	// path): reflectPlain says which, in its words.
	return func(buf []byte, v reflect.Value) ([]byte, error) { return reflectPlain(buf, v, t) }
}

// encodeCanonical copies already canonical bytes (an event's object body,
// the bulk of its encoding). The buffer grows with room to spare for what
// usually follows, so that the members after the body do not grow it again.
func encodeCanonical(buf []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(buf, "null"...), nil
	}
	b := v.Bytes()
	if cap(buf)-len(buf) < len(b) {
		buf = slices.Grow(buf, len(b)+canonicalSlack)
	}
	return append(buf, b...), nil
}

// canonicalSlack is the room left after a Canonical when the buffer has
// to grow for it: an event's members after its body (the object's ref,
// parents, reasons, refs, run id and type) take about this much.
const canonicalSlack = 512

func encodeTextMarshaler(buf []byte, v reflect.Value) ([]byte, error) {
	b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return nil, err
	}
	return appendString(buf, string(b)), nil
}

func pointerEncoder(t reflect.Type) encoderFunc {
	elem := encoderOf(t.Elem())
	return func(buf []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		return elem(buf, v.Elem())
	}
}

func encodeInterface(buf []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(buf, "null"...), nil
	}
	e := v.Elem()
	return encoderOf(e.Type())(buf, e)
}

func encodeString(buf []byte, v reflect.Value) ([]byte, error) {
	buf, ok := appendValidString(buf, v.String())
	if !ok {
		return nil, errSlowPath{v.Type()} // encoding/json substitutes U+FFFD
	}
	return buf, nil
}

func encodeBool(buf []byte, v reflect.Value) ([]byte, error) {
	if v.Bool() {
		return append(buf, "true"...), nil
	}
	return append(buf, "false"...), nil
}

func encodeInt(buf []byte, v reflect.Value) ([]byte, error) {
	return strconv.AppendInt(buf, v.Int(), 10), nil
}

func encodeUint(buf []byte, v reflect.Value) ([]byte, error) {
	return strconv.AppendUint(buf, v.Uint(), 10), nil
}

func encodeByteSlice(buf []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(buf, "null"...), nil
	}
	return nil, errSlowPath{v.Type()} // []byte is base64 in encoding/json
}

// sequenceEncoder encodes a slice (nil is null) or an array.
func sequenceEncoder(t reflect.Type, slice bool) encoderFunc {
	elem := encoderOf(t.Elem())
	return func(buf []byte, v reflect.Value) ([]byte, error) {
		if slice && v.IsNil() {
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		n := v.Len()
		for i := range n {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = elem(buf, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
}

// canonicalsEncoder wraps the encoder of a slice of Canonical (a working
// memory's units: the largest objects a run hashes every cycle) so that
// the buffer grows once, to the sum of the elements' lengths, instead of
// doubling its way there.
func canonicalsEncoder(seq encoderFunc) encoderFunc {
	return func(buf []byte, v reflect.Value) ([]byte, error) {
		n := v.Len() + 2 + canonicalSlack
		for i := range v.Len() {
			n += max(v.Index(i).Len(), len("null"))
		}
		return seq(slices.Grow(buf, n), v)
	}
}

// mapEntry is one member of a map being encoded: its key, and its value
// as a string (a map of strings) or as a reflect.Value.
type mapEntry struct {
	key string
	str string
	val reflect.Value
}

// mapEncoder encodes a map with string keys, members in key order. Keys
// (and values, in a map of plain strings, such as an event's refs) are read
// through one reusable reflect.Value each rather than a copy per member.
func mapEncoder(t reflect.Type) encoderFunc {
	elem := encoderOf(t.Elem())
	strElems := t.Elem().Kind() == reflect.String && specialOf(t.Elem()) == plain
	return func(buf []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		var small [8]mapEntry
		entries := small[:0]
		if n := v.Len(); n > len(small) {
			entries = make([]mapEntry, 0, n)
		}
		k := reflect.New(t.Key()).Elem()
		var e reflect.Value
		if strElems {
			e = reflect.New(t.Elem()).Elem()
		}
		it := v.MapRange()
		for it.Next() {
			k.SetIterKey(it)
			if strElems {
				e.SetIterValue(it)
				entries = append(entries, mapEntry{key: k.String(), str: e.String()})
			} else {
				entries = append(entries, mapEntry{key: k.String(), val: it.Value()})
			}
		}
		slices.SortFunc(entries, compareKeys)
		buf = append(buf, '{')
		for i := range entries {
			en := &entries[i]
			if i > 0 {
				buf = append(buf, ',')
			}
			var ok bool
			if buf, ok = appendValidString(buf, en.key); !ok {
				return nil, errSlowPath{t}
			}
			buf = append(buf, ':')
			if strElems {
				if buf, ok = appendValidString(buf, en.str); !ok {
					return nil, errSlowPath{t.Elem()}
				}
				continue
			}
			var err error
			if buf, err = elem(buf, en.val); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	}
}

func compareKeys(a, b mapEntry) int { return strings.Compare(a.key, b.key) }

// compiledField is one struct field as its encoder writes it.
type compiledField struct {
	key       []byte // the encoded name and the colon: "name":
	index     []int
	omitEmpty bool
	enc       encoderFunc
}

// structEncoder encodes a struct's fields in the order fieldsOf sorts
// them.
func structEncoder(t reflect.Type) encoderFunc {
	infos := fieldsOf(t)
	fields := make([]compiledField, len(infos))
	for i, f := range infos {
		fields[i] = compiledField{key: append(appendString(nil, f.name), ':'), index: f.index, omitEmpty: f.omitEmpty, enc: encoderOf(f.typ)}
	}
	return func(buf []byte, v reflect.Value) ([]byte, error) {
		buf = append(buf, '{')
		first := true
		for i := range fields {
			f := &fields[i]
			var fv reflect.Value
			if len(f.index) == 1 {
				fv = v.Field(f.index[0])
			} else {
				var ok bool
				if fv, ok = fieldByIndex(v, f.index); !ok {
					continue
				}
			}
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = append(buf, f.key...)
			var err error
			if buf, err = f.enc(buf, fv); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	}
}

// appendValidString is appendString for a string that must be valid
// UTF-8, checked in the same pass: ok is false (and buf unusable) when it
// is not. Runs of bytes that stand for themselves are skipped eight at a
// time (specialMask, as the walker does) and copied in one append.
func appendValidString(buf []byte, s string) ([]byte, bool) {
	buf = slices.Grow(buf, len(s)+2)
	buf = append(buf, '"')
	start, i := 0, 0
	for i < len(s) {
		for i+8 <= len(s) && specialMask(load64(s, i)) == 0 {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if plainByte(c) {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return buf, false
			}
			i += size
			continue
		}
		buf = append(buf, s[start:i]...)
		buf = appendEscapedRune(buf, rune(c))
		i++
		start = i
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"'), true
}

// load64 reads the eight bytes of s from i on as a little-endian word
// (the compiler makes it one load).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
