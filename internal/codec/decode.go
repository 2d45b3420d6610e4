package codec

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// ErrUnknownField marks a key that the target type does not declare. Go's
// encoding/json would silently drop it or, worse, match it to a field whose
// name differs only in case.
var ErrUnknownField = errors.New("unknown field")

// FieldError locates a decoding or validation problem inside a document.
// Path is a dotted JSON path such as "rules[2].operation"; it is empty when
// the problem concerns the document as a whole.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("field %s: %v", e.Path, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Under puts an element's error under the element's place in the document
// (at): the field a *FieldError names becomes at.field ("" names the
// element itself); any other error is about the element as a whole.
func Under(at string, err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return &FieldError{Path: at, Err: err}
	}
	if fe.Path == "" {
		return &FieldError{Path: at, Err: fe.Err}
	}
	return &FieldError{Path: at + "." + fe.Path, Err: fe.Err}
}

// Unmarshal decodes a document people write into v with strict semantics:
// unknown fields, keys in the wrong case, duplicate keys, non-integer
// numbers, trailing bytes and null for a typed field are all rejected.
// Formatting is free.
func Unmarshal(data []byte, v any) error {
	val, err := Parse(data)
	if err != nil {
		return err
	}
	return decodeValue(val, data, v, nullInput)
}

// UnmarshalStored decodes a document acr wrote itself but not in canonical
// form (an indented report or manifest): formatting is free as with
// Unmarshal, and null is accepted where acr writes it, as with
// UnmarshalCanonical.
func UnmarshalStored(data []byte, v any) error {
	val, err := Parse(data)
	if err != nil {
		return err
	}
	return decodeValue(val, data, v, nullStored)
}

// DecodeInput decodes an already parsed document people wrote into v, with
// the checks of Unmarshal.
func DecodeInput(val Value, v any) error {
	return decodeValue(val, val.Encode(), v, nullInput)
}

// nullRule says where a JSON null may stand.
type nullRule int

const (
	// nullStored: where acr itself may write null (a nil pointer, slice or
	// map), besides values that decode null themselves. Stored documents.
	nullStored nullRule = iota
	// nullInput: only where a value decodes null itself (state.Value, for
	// a payload) or any JSON goes. A person leaves a field out instead of
	// writing null, and the JSON Schemas say so.
	nullInput
)

// nullAllowed reports whether null may stand for a value of type t.
func nullAllowed(t reflect.Type, rule nullRule) bool {
	switch {
	case t == rawMessageType, t.Kind() == reflect.Interface:
		return true
	case t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(jsonUnmarshalerType):
		return true
	case t.Kind() == reflect.Pointer:
		return rule == nullStored || nullAllowed(t.Elem(), rule)
	case t.Kind() == reflect.Slice, t.Kind() == reflect.Map:
		return rule == nullStored
	}
	return false
}

// UnmarshalCanonical decodes a stored document that must be in canonical
// form, with the same strictness as Unmarshal. Loading then re-encoding
// such a document gives back the same bytes.
func UnmarshalCanonical(data []byte, v any) error {
	if decodedExactly(data, v) {
		return nil
	}
	val, err := ParseCanonical(data)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	return decodeValue(val, data, v, nullStored)
}

// decodedExactly is UnmarshalCanonical's fast path, for the documents acr
// wrote itself: encoding/json decodes data into a new value of v's type,
// and if encoding that gives back exactly data, the strict decoder has
// nothing to refuse, and the value becomes *v. The bytes are canonical
// (Marshal wrote the same), every key is one the type declares, spelled as
// declared (Marshal writes no other), and null stands only where Marshal
// writes it (a nil pointer, slice, map or interface, or a value that
// decodes null itself: Value, Canonical), which stored documents allow.
// It is taken only when *v is the zero value, so that decoding into a new
// value is what decoding into *v would give; when it reports false, *v is
// untouched and the strict path decides.
func decodedExactly(data []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return false
	}
	fresh := reflect.New(rv.Type().Elem())
	if json.Unmarshal(data, fresh.Interface()) != nil {
		return false
	}
	if !encodesTo(fresh.Interface(), data) {
		return false
	}
	rv.Elem().Set(fresh.Elem())
	return true
}

// UnmarshalExact decodes a stored document and checks that encoding the
// result gives back exactly the bytes read. That one comparison is as
// strict as UnmarshalCanonical (an unknown, duplicated or miscased key, or
// any formatting that is not canonical, changes the bytes) and cheaper,
// because the document is parsed once, by encoding/json, instead of twice;
// it is meant for documents acr wrote itself (checkpoint files, the
// manifest), where a mismatch names the likely cause. On a mismatch the
// strict decoder runs to name the field, if it can.
func UnmarshalExact(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		if serr := UnmarshalCanonical(b, v); serr != nil {
			return serr
		}
		return err
	}
	if encodesTo(v, b) {
		return nil
	}
	enc, err := Marshal(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(enc, b) {
		if serr := UnmarshalCanonical(b, v); serr != nil {
			return serr
		}
		i := 0
		for i < len(enc) && i < len(b) && enc[i] == b[i] {
			i++
		}
		return fmt.Errorf("the file is not what this acr writes for its content (first difference at byte %d): "+
			"it was written with a different schema, by another acr version, or edited by hand", i)
	}
	return nil
}

// DecodeValue decodes an already parsed Value of a stored document into v
// with the same field checks as UnmarshalCanonical.
func DecodeValue(val Value, v any) error {
	return decodeValue(val, val.Encode(), v, nullStored)
}

func decodeValue(val Value, data []byte, v any, rule nullRule) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode target must be a non-nil pointer, got %T", v)
	}
	if err := checkFields(val, rv.Type().Elem(), "", rule); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &FieldError{Path: te.Field, Err: fmt.Errorf("expected %s, found JSON %s", describeType(te.Type), te.Value)}
		}
		return err
	}
	return nil
}

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
)

// checkFields walks the parsed document alongside the Go type and rejects
// any object key the type does not declare with exactly that spelling, and
// null where the rule does not allow it (encoding/json would silently read
// it as "absent").
func checkFields(val Value, t reflect.Type, path string, rule nullRule) error {
	if val.Kind == KindNull {
		if nullAllowed(t, rule) {
			return nil
		}
		what := "the document"
		if path != "" {
			what = "this field"
		}
		return &FieldError{Path: path, Err: fmt.Errorf("null is not allowed for %s: expected %s (leave an optional field out instead)", what, describeType(t))}
	}
	if t == rawMessageType || t.Kind() == reflect.Interface {
		return nil
	}
	if t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkFields(val, t.Elem(), path, rule)
	case reflect.Struct:
		if val.Kind != KindObject {
			return nil // the type mismatch is reported by the decoder
		}
		fields := StructFields(t)
		for _, m := range val.Obj {
			ft, ok := fields[m.Key]
			if !ok {
				return &FieldError{Path: joinPath(path, m.Key), Err: ErrUnknownField}
			}
			if err := checkFields(m.Val, ft, joinPath(path, m.Key), rule); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if val.Kind != KindArray {
			return nil
		}
		for i, e := range val.Arr {
			if err := checkFields(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", rule); err != nil {
				return err
			}
		}
	case reflect.Map:
		if val.Kind != KindObject {
			return nil
		}
		for _, m := range val.Obj {
			if err := checkFields(m.Val, t.Elem(), joinPath(path, m.Key), rule); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// StructFields maps the JSON names a struct type declares to their types,
// the way encoding/json sees them (tags, "-", embedded structs flattened).
// The strict decoder accepts exactly these names; tests that hold the JSON
// Schemas to the Go types use the same map, so the two cannot drift.
func StructFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	collectFields(t, m)
	return m
}

func collectFields(t reflect.Type, m map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, m)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
}
