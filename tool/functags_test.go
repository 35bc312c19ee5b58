package tool_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/tool"
)

// einoIn is a struct as Eino and invopop/jsonschema users write it: keyed
// tags, a nested struct and a slice of them with their own.
type einoIn struct {
	City  string      `json:"city" jsonschema:"description=the city\\, as its people write it,required"`
	Unit  string      `json:"unit,omitempty" jsonschema:"description=temperature unit,enum=celsius,enum=fahrenheit"`
	Days  int         `json:"days,omitempty" jsonschema:"description=how many days,minimum=1,maximum=7"`
	Notes string      `json:"notes,omitempty" jsonschema_description:"what else to say"`
	Plain string      `json:"plain,omitempty" jsonschema:"a description in the plain style"`
	Where *einoPlace  `json:"where,omitempty"`
	Stops []einoPlace `json:"stops,omitempty"`
	At    time.Time   `json:"at,omitzero"`
}

type einoPlace struct {
	Lat float64 `json:"lat" jsonschema:"description=latitude,required"`
	Lon float64 `json:"lon" jsonschema:"description=longitude"`
}

type property struct {
	Type        any      `json:"type"`
	Description string   `json:"description"`
	Enum        []any    `json:"enum"`
	Minimum     *float64 `json:"minimum"`
	Maximum     *float64 `json:"maximum"`
	Format      string   `json:"format"`
	Required    []string `json:"required"`
	Properties  map[string]property
	Items       *property `json:"items"`
}

func funcSchema[In any](t *testing.T) (property, tool.Tool) {
	t.Helper()
	ft, err := tool.Func(tool.Spec{Name: "weather", Policy: tool.Policy{Risk: tool.RiskRead}}, func(_ context.Context, _ tool.Call, in In) (In, error) { return in, nil })
	if err != nil {
		t.Fatal(err)
	}
	var s property
	if err := json.Unmarshal(ft.Spec().InputSchema, &s); err != nil {
		t.Fatal(err)
	}
	return s, ft
}

func TestFuncKeyedTags(t *testing.T) {
	s, ft := funcSchema[einoIn](t)
	p := s.Properties
	if got := p["city"].Description; got != "the city, as its people write it" {
		t.Errorf("city description = %q", got)
	}
	if !slices.Equal(s.Required, []string{"city"}) {
		t.Errorf("required = %v, want [city]", s.Required)
	}
	if u := p["unit"]; u.Description != "temperature unit" || len(u.Enum) != 2 || u.Enum[0] != "celsius" || u.Enum[1] != "fahrenheit" {
		t.Errorf("unit = %+v", u)
	}
	if d := p["days"]; d.Minimum == nil || *d.Minimum != 1 || d.Maximum == nil || *d.Maximum != 7 {
		t.Errorf("days = %+v", d)
	}
	if p["notes"].Description != "what else to say" || p["plain"].Description != "a description in the plain style" {
		t.Errorf("notes, plain = %+v, %+v", p["notes"], p["plain"])
	}
	where := p["where"]
	if where.Properties["lat"].Description != "latitude" || !slices.Equal(where.Required, []string{"lat", "lon"}) {
		t.Errorf("where = %+v", where)
	}
	if st := p["stops"].Items; st == nil || st.Properties["lon"].Description != "longitude" {
		t.Errorf("stops = %+v", p["stops"])
	}
	if p["at"].Type != "string" {
		t.Errorf("at = %+v, want a string (time.Time keeps its schema)", p["at"])
	}
	// The schema is enforced and the arguments still decode into the struct.
	reg, err := tool.NewRegistry(ft)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := reg.Lookup("weather")
	if err := e.Schema.Validate("weather", []byte(`{"city":"Oslo","unit":"kelvin"}`)); err == nil {
		t.Error("the schema accepts a unit outside its enum")
	}
	if err := e.Schema.Validate("weather", []byte(`{"unit":"celsius"}`)); err == nil {
		t.Error("the schema accepts arguments without the required city")
	}
	res, err := ft.Call(context.Background(), tool.Call{Args: json.RawMessage(`{"city":"Oslo","where":{"lat":59.9,"lon":10.7}}`)})
	if err != nil || res.Status != tool.StatusOK || !strings.Contains(string(res.Data), `"lat":59.9`) {
		t.Errorf("call = %+v, %v", res, err)
	}
}

func TestFuncPlainTags(t *testing.T) {
	s, _ := funcSchema[shoutIn](t)
	if s.Properties["text"].Description != "the text to shout" || !slices.Equal(s.Required, []string{"text"}) {
		t.Errorf("schema = %+v", s)
	}
}

func TestFuncMalformedTags(t *testing.T) {
	type unknownKey struct {
		A string `json:"a" jsonschema:"descripton=typo"`
	}
	type strayComma struct {
		A string `json:"a" jsonschema:"description=x,,required"`
	}
	type badNumber struct {
		A int `json:"a" jsonschema:"minimum=one"`
	}
	type badEnum struct {
		A int `json:"a" jsonschema:"enum=red"`
	}
	type requiredValue struct {
		A string `json:"a" jsonschema:"required=true"`
	}
	for _, c := range []struct {
		name string
		make func() (tool.Tool, error)
		want []string
	}{
		{"unknown key", newFunc[unknownKey], []string{"unknownKey.A", `unknown key "descripton"`, "description"}},
		{"stray comma", newFunc[strayComma], []string{"strayComma.A", "empty key"}},
		{"bad number", newFunc[badNumber], []string{"badNumber.A", "minimum=one"}},
		{"bad enum", newFunc[badEnum], []string{"badEnum.A", "enum=red"}},
		{"required with a value", newFunc[requiredValue], []string{"requiredValue.A", "required is a flag"}},
	} {
		_, err := c.make()
		if err == nil {
			t.Errorf("%s: tool.Func accepted it", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
}

func newFunc[In any]() (tool.Tool, error) {
	return tool.Func(tool.Spec{Name: "f", Policy: tool.Policy{Risk: tool.RiskRead}}, func(_ context.Context, _ tool.Call, in In) (string, error) { return "", nil })
}
