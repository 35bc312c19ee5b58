package tool

import (
	"reflect"
	"strings"
	"testing"
)

// A tag Go cannot unquote (`\,` where the source needs `\\,`) reads as no
// tag at all to reflect: the schema refuses it instead of losing the
// field's description and required. go vet refuses such a tag in source,
// so the struct is made at run time.
func TestSchemaOfUnreadableTag(t *testing.T) {
	typ := reflect.StructOf([]reflect.StructField{{Name: "A", Type: reflect.TypeFor[string](),
		Tag: reflect.StructTag(`json:"a" jsonschema:"description=x\, y"`)}})
	_, err := schemaOf(typ)
	if err == nil || !strings.Contains(err.Error(), "not a valid Go struct tag") || !strings.Contains(err.Error(), ".A") {
		t.Errorf("schemaOf(a tag Go cannot read) = %v", err)
	}
}
