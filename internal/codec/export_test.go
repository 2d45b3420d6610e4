package codec

import "reflect"

// ReflectMarshal encodes v with the reflective encoder alone (what Marshal
// ran before the compiled encoder), for the benchmarks that compare the
// two.
func ReflectMarshal(v any) ([]byte, error) { return reflectValue(nil, reflect.ValueOf(v)) }

// StrictUnmarshalCanonical is UnmarshalCanonical without its fast path,
// for the benchmarks that compare the two.
func StrictUnmarshalCanonical(data []byte, v any) error { return strictOnly(data, v) }
