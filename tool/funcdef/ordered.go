package funcdef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/arbiterhq/arbiter/internal/jsonstr"
)

// The definition as a JSON document whose objects keep their members in
// the order written: read with decodeOrdered, written back with
// writeValue, so a converted schema lists properties as its author did.

// object is a decoded JSON object that keeps its members in order.
type object struct{ members []member }

type member struct {
	key string
	val any // nil, bool, json.Number, string, []any, *object, or *node when written
}

func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// writeValue encodes a decoded value, a node or a list of either.
func writeValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(string(x))
	case string:
		writeString(b, x)
	case *node:
		x.write(b)
	case *object:
		b.WriteByte('{')
		for i, m := range x.members {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.key)
			b.WriteByte(':')
			writeValue(b, m.val)
		}
		b.WriteByte('}')
	case []any:
		writeList(b, len(x), func(i int) { writeValue(b, x[i]) })
	case []string:
		writeList(b, len(x), func(i int) { writeString(b, x[i]) })
	default:
		panic(fmt.Sprintf("tool: cannot encode %T", v)) // unreachable: values come from decodeOrdered
	}
}

func writeList(b *bytes.Buffer, n int, each func(int)) {
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		each(i)
	}
	b.WriteByte(']')
}

// writeString writes s as a JSON string, escaped as encoding/json does.
func writeString(b *bytes.Buffer, s string) {
	b.Write(jsonstr.Append(b.AvailableBuffer(), s))
}

// decodeOrdered decodes one JSON value, keeping object members in order
// and refusing duplicate member names.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the value")
	}
	return v, nil
}

func readValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := &object{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := tok.(string) // the decoder only yields strings as member names
			if _, dup := obj.get(key); dup {
				return nil, fmt.Errorf("duplicate member %q", key)
			}
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			obj.members = append(obj.members, member{key, v})
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return tok, nil
}
