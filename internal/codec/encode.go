package codec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The reflective canonical encoder walks Go values directly and writes
// canonical bytes in one pass, asking reflect and the type caches about
// every value it meets. Its output must be identical to encoding/json's
// output re-canonicalized, which the tests and a fuzz target check. Marshal
// runs the compiled encoder (compiled.go), which must write exactly what
// reflectValue writes; reflectValue stays as its reference and encodes the
// types with a custom encoding for it.

// fieldInfo describes one struct field for encoding.
type fieldInfo struct {
	name      string
	index     []int
	omitEmpty bool
	typ       reflect.Type
}

// typeFields caches the sorted JSON fields of each struct type. The cache
// holds pure functions of the types (never state of a run), so it cannot
// change any result; it only avoids recomputing them.
var typeFields sync.Map // reflect.Type -> []fieldInfo

func fieldsOf(t reflect.Type) []fieldInfo {
	if f, ok := typeFields.Load(t); ok {
		return f.([]fieldInfo)
	}
	var out []fieldInfo
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out = append(out, fieldInfo{name: name, index: idx, omitEmpty: strings.Contains(","+opts+",", ",omitempty,"), typ: f.Type})
		}
	}
	walk(t, nil)
	slices.SortStableFunc(out, func(a, b fieldInfo) int { return strings.Compare(a.name, b.name) })
	typeFields.Store(t, out)
	return out
}

var (
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	valueTypeR        = reflect.TypeFor[Value]()
	numberType        = reflect.TypeFor[json.Number]()
	canonicalType     = reflect.TypeFor[Canonical]()
)

// errSlowPath asks Marshal to fall back to encoding/json.
type errSlowPath struct{ t reflect.Type }

func (e errSlowPath) Error() string { return "canonical encode: no fast path for " + e.t.String() }

// special says how a type is encoded when it is not plain data.
type special uint8

const (
	plain special = iota
	isValue
	isNumber
	isCanonical
	isRaw
	isJSONMarshaler
	isTextMarshaler
	isSlow
)

// specialCache memoises specialOf, a pure function of the type.
var specialCache sync.Map // reflect.Type -> special

func specialOf(t reflect.Type) special {
	if s, ok := specialCache.Load(t); ok {
		return s.(special)
	}
	s := plain
	switch {
	case t == valueTypeR:
		s = isValue
	case t == numberType:
		s = isNumber
	case t == canonicalType:
		s = isCanonical
	case t == rawMessageType:
		s = isRaw
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface:
	case t.Implements(jsonMarshalerType):
		s = isJSONMarshaler
	case t.Implements(textMarshalerType):
		s = isTextMarshaler
	case reflect.PointerTo(t).Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType):
		s = isSlow
	}
	specialCache.Store(t, s)
	return s
}

// reflectValue appends the canonical encoding of v.
func reflectValue(buf []byte, v reflect.Value) ([]byte, error) {
	if !v.IsValid() {
		return append(buf, "null"...), nil
	}
	t := v.Type()
	switch specialOf(t) {
	case isSlow:
		return nil, errSlowPath{t}
	case isValue:
		return AppendEncode(buf, v.Interface().(Value)), nil
	case isNumber:
		val, err := Parse([]byte(v.String()))
		if err != nil || val.Kind != KindNumber {
			return nil, fmt.Errorf("canonical encode: number %q: %w", v.String(), err)
		}
		return AppendEncode(buf, val), nil
	case isCanonical:
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		return append(buf, v.Bytes()...), nil
	case isRaw:
		raw := v.Interface().(json.RawMessage)
		if raw == nil {
			return append(buf, "null"...), nil
		}
		val, err := Parse(raw)
		if err != nil {
			return nil, err
		}
		return AppendEncode(buf, val), nil
	case isJSONMarshaler:
		return appendMarshaler(buf, v)
	case isTextMarshaler:
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return nil, err
		}
		return appendString(buf, string(b)), nil
	}
	return reflectPlain(buf, v, t)
}

func reflectPlain(buf []byte, v reflect.Value, t reflect.Type) ([]byte, error) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		return reflectValue(buf, v.Elem())
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return nil, errSlowPath{t} // encoding/json substitutes U+FFFD
		}
		return appendString(buf, v.String()), nil
	case reflect.Bool:
		if v.Bool() {
			return append(buf, "true"...), nil
		}
		return append(buf, "false"...), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(buf, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(buf, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return nil, fmt.Errorf("canonical encode: %w", &SyntaxError{Msg: "non-integer number: floats are kept out of canonical state"})
	case reflect.Slice:
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, errSlowPath{t} // []byte is base64 in encoding/json
		}
		fallthrough
	case reflect.Array:
		buf = append(buf, '[')
		for i := range v.Len() {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = reflectValue(buf, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case reflect.Map:
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		if t.Key().Kind() != reflect.String {
			return nil, errSlowPath{t}
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			if !utf8.ValidString(k.String()) {
				return nil, errSlowPath{t}
			}
			buf = appendString(buf, k.String())
			buf = append(buf, ':')
			var err error
			if buf, err = reflectValue(buf, v.MapIndex(k)); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case reflect.Struct:
		buf = append(buf, '{')
		first := true
		for _, f := range fieldsOf(t) {
			fv, ok := fieldByIndex(v, f.index)
			if !ok || (f.omitEmpty && isEmpty(fv)) {
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = appendString(buf, f.name)
			buf = append(buf, ':')
			var err error
			if buf, err = reflectValue(buf, fv); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	}
	return nil, errSlowPath{t}
}

func appendMarshaler(buf []byte, v reflect.Value) ([]byte, error) {
	b, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return nil, err
	}
	val, err := Parse(b)
	if err != nil {
		return nil, err
	}
	return AppendEncode(buf, val), nil
}

// fieldByIndex follows an embedded-field path; ok is false when it runs
// through a nil embedded pointer (encoding/json omits such fields).
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmpty is encoding/json's notion of empty for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
