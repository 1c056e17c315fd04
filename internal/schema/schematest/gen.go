// Package schematest draws random values that a schema (internal/schema)
// calls valid, strings from their patterns included: tests hand them to the
// model's validation, which must accept them (up to the state of the
// target).
package schematest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"time"

	"github.com/edgenf/edgenf/internal/schema"
)

// Gen draws values.
type Gen struct {
	// Names, when set, are drawn for half the names (schema.Name strings):
	// those of a test's fixture (its ports), so that a check of what a
	// name refers to is passed as often as not.
	Names []string
	r     *rand.Rand
	re    map[string]*regexp.Regexp
}

// New returns a generator with a fixed seed: the same values every run.
func New(seed int64) *Gen {
	return &Gen{r: rand.New(rand.NewSource(seed)), re: map[string]*regexp.Regexp{}}
}

// JSON draws a value of s, as JSON.
func (g *Gen) JSON(s *schema.Schema) json.RawMessage {
	b, err := json.Marshal(g.Value(s))
	if err != nil {
		panic(err)
	}
	return b
}

// Value draws a value of s: nil, bool, json.Number, string, []any or
// map[string]any.
func (g *Gen) Value(s *schema.Schema) any {
	if s == nil {
		return g.anyJSON(2)
	}
	if len(s.AnyOf) > 0 {
		return g.Value(merge(s, s.AnyOf[g.r.Intn(len(s.AnyOf))]))
	}
	if len(s.OneOf) > 0 {
		return g.Value(s.OneOf[g.r.Intn(len(s.OneOf))])
	}
	if len(s.Enum) > 0 {
		return s.Enum[g.r.Intn(len(s.Enum))]
	}
	switch s.Type {
	case "boolean":
		return g.r.Intn(2) == 1
	case "integer":
		return g.integer(s)
	case "number":
		return json.Number(fmt.Sprint(g.r.Float64() * 1000))
	case "string":
		return g.str(s)
	case "array":
		lo, hi := 0, 3
		if s.MinItems != nil {
			lo = *s.MinItems
			hi = lo + 3
		}
		if s.MaxItems != nil && *s.MaxItems < hi {
			hi = *s.MaxItems
		}
		out := []any{}
		for n := lo + g.r.Intn(hi-lo+1); len(out) < n; {
			out = append(out, g.Value(s.Items))
		}
		return out
	case "object":
		return g.object(s)
	}
	return g.anyJSON(2)
}

// merge narrows s by one of its AnyOf branches: the branch's properties
// replace s's, its required ones are added.
func merge(s, b *schema.Schema) *schema.Schema {
	m := *s
	m.AnyOf = nil
	m.Properties = map[string]*schema.Schema{}
	for k, v := range s.Properties {
		m.Properties[k] = v
	}
	for k, v := range b.Properties {
		m.Properties[k] = v
	}
	m.Required = append(append([]string(nil), s.Required...), b.Required...)
	return &m
}

func (g *Gen) object(s *schema.Schema) any {
	out := map[string]any{}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p := s.Properties[k]
		if p.Not != nil || (!required[k] && g.r.Intn(2) == 0) {
			continue
		}
		out[k] = g.Value(p)
	}
	if extra, ok := s.AdditionalProperties.(*schema.Schema); ok && len(s.Properties) == 0 {
		max := 3
		if s.MaxProperties != nil && *s.MaxProperties < max {
			max = *s.MaxProperties
		}
		for n := g.r.Intn(max + 1); len(out) < n; {
			out[g.word()] = g.Value(extra)
		}
	}
	return out
}

func (g *Gen) word() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 1+g.r.Intn(6))
	for i := range b {
		b[i] = letters[g.r.Intn(len(letters))]
	}
	return string(b)
}

// integer draws within the bounds, preferring them and 0 and 1.
func (g *Gen) integer(s *schema.Schema) any {
	lo, hi := big.NewInt(-1<<31), big.NewInt(1<<31)
	if s.Minimum != nil {
		lo, _ = new(big.Int).SetString(string(*s.Minimum), 10)
	}
	if s.Maximum != nil {
		hi, _ = new(big.Int).SetString(string(*s.Maximum), 10)
	}
	in := func(v *big.Int) bool { return v.Cmp(lo) >= 0 && v.Cmp(hi) <= 0 }
	var v *big.Int
	switch g.r.Intn(6) {
	case 0:
		v = lo
	case 1:
		v = hi
	case 2:
		v = big.NewInt(int64(g.r.Intn(2)))
	default:
		span := new(big.Int).Sub(hi, lo)
		span.Add(span, big.NewInt(1))
		v = new(big.Int).Add(lo, new(big.Int).Rand(g.r, span))
	}
	if !in(v) {
		v = lo
	}
	return json.Number(v.String())
}

func (g *Gen) str(s *schema.Schema) string {
	switch {
	case len(g.Names) > 0 && s.Pattern == schema.Formats["name"].Pattern && g.r.Intn(2) == 0:
		return g.Names[g.r.Intn(len(g.Names))]
	case s.Pattern != "":
		return g.FromPattern(s.Pattern)
	case s.Format == "date-time":
		return time.Unix(g.r.Int63n(4102444800), 0).UTC().Format(time.RFC3339)
	case s.Format == "byte":
		b := make([]byte, g.r.Intn(12))
		g.r.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	max := 12
	if s.MaxLength != nil && *s.MaxLength < max {
		max = *s.MaxLength
	}
	min := 0
	if s.MinLength != nil {
		min = *s.MinLength
	}
	b := make([]byte, min+g.r.Intn(max-min+1))
	for i := range b {
		b[i] = byte(0x20 + g.r.Intn(0x5f))
	}
	return string(b)
}

// FromPattern draws a string the pattern matches (mostly printable ASCII),
// and checks that it does.
func (g *Gen) FromPattern(p string) string {
	re, ok := g.re[p]
	if !ok {
		re = regexp.MustCompile(p)
		g.re[p] = re
	}
	tree, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	g.regex(&b, tree.Simplify())
	s := b.String()
	if !re.MatchString(s) {
		panic(fmt.Sprintf("schematest: %q drawn from %s does not match it", s, p))
	}
	return s
}

func (g *Gen) regex(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && g.r.Intn(2) == 0 {
				r = []rune(strings.ToUpper(string(r)))[0]
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.fromClass(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte(byte(0x20 + g.r.Intn(0x5f)))
	case syntax.OpCapture:
		g.regex(b, re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			g.regex(b, s)
		}
	case syntax.OpAlternate:
		g.regex(b, re.Sub[g.r.Intn(len(re.Sub))])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		min, max := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			min = 1
		case syntax.OpQuest:
			max = 1
		case syntax.OpRepeat:
			min, max = re.Min, re.Max
			if max < 0 || max > min+3 {
				max = min + 3
			}
		}
		for n := min + g.r.Intn(max-min+1); n > 0; n-- {
			g.regex(b, re.Sub[0])
		}
	}
	// anchors, boundaries and empty matches write nothing
}

// fromClass picks a rune of a class (pairs of ranges), printable ASCII
// when the class has some.
func (g *Gen) fromClass(ranges []rune) rune {
	type span struct{ lo, hi rune }
	var ascii, all []span
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		all = append(all, span{lo, hi})
		if lo < 0x20 {
			lo = 0x20
		}
		if hi > 0x7e {
			hi = 0x7e
		}
		if lo <= hi {
			ascii = append(ascii, span{lo, hi})
		}
	}
	pick := ascii
	if len(pick) == 0 {
		pick = all
	}
	s := pick[g.r.Intn(len(pick))]
	return s.lo + rune(g.r.Intn(int(s.hi-s.lo)+1))
}

func (g *Gen) anyJSON(depth int) any {
	switch n := g.r.Intn(6); {
	case n == 0 || depth == 0:
		return nil
	case n == 1:
		return g.r.Intn(2) == 1
	case n == 2:
		return json.Number(fmt.Sprint(g.r.Intn(1000)))
	case n == 3:
		return g.word()
	case n == 4:
		return []any{g.anyJSON(depth - 1)}
	}
	return map[string]any{g.word(): g.anyJSON(depth - 1)}
}

// Check reports why a JSON value (as encoding/json decodes it with
// UseNumber) is not valid by s: the checks of the subset of JSON Schema the
// document uses.
func (g *Gen) Check(s *schema.Schema, v any) error {
	return g.check(s, v, "$")
}

func (g *Gen) check(s *schema.Schema, v any, at string) error {
	if s == nil {
		return nil
	}
	if s.Not != nil {
		if g.check(s.Not, v, at) == nil {
			return fmt.Errorf("%s: matches what it must not", at)
		}
		return nil
	}
	if v == nil {
		if s.Nullable || s.Type == "" {
			return nil
		}
		return fmt.Errorf("%s: null", at)
	}
	if err := g.checkType(s, v, at); err != nil {
		return err
	}
	if len(s.AnyOf) > 0 {
		var first error
		for _, b := range s.AnyOf {
			err := g.check(b, v, at)
			if err == nil {
				first = nil
				break
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return fmt.Errorf("%s: no branch of anyOf: %v", at, first)
		}
	}
	if len(s.OneOf) > 0 {
		n := 0
		for _, b := range s.OneOf {
			if g.check(b, v, at) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %d branches of oneOf match", at, n)
		}
	}
	return nil
}

func (g *Gen) checkType(s *schema.Schema, v any, at string) error {
	if len(s.Enum) > 0 {
		str, _ := v.(string)
		for _, e := range s.Enum {
			if e == str {
				return nil
			}
		}
		return fmt.Errorf("%s: %v not in %v", at, v, s.Enum)
	}
	switch x := v.(type) {
	case bool:
		if s.Type != "" && s.Type != "boolean" {
			return fmt.Errorf("%s: a boolean, want %s", at, s.Type)
		}
	case json.Number:
		if s.Type != "" && s.Type != "integer" && s.Type != "number" {
			return fmt.Errorf("%s: a number, want %s", at, s.Type)
		}
		n, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return fmt.Errorf("%s: %s", at, x)
		}
		if s.Type == "integer" && !n.IsInt() {
			return fmt.Errorf("%s: %s is not an integer", at, x)
		}
		if s.Minimum != nil {
			if m, _ := new(big.Rat).SetString(string(*s.Minimum)); n.Cmp(m) < 0 {
				return fmt.Errorf("%s: %s < %s", at, x, *s.Minimum)
			}
		}
		if s.Maximum != nil {
			if m, _ := new(big.Rat).SetString(string(*s.Maximum)); n.Cmp(m) > 0 {
				return fmt.Errorf("%s: %s > %s", at, x, *s.Maximum)
			}
		}
	case string:
		if s.Type != "" && s.Type != "string" {
			return fmt.Errorf("%s: a string, want %s", at, s.Type)
		}
		if s.Pattern != "" {
			re, ok := g.re[s.Pattern]
			if !ok {
				re = regexp.MustCompile(s.Pattern)
				g.re[s.Pattern] = re
			}
			if !re.MatchString(x) {
				return fmt.Errorf("%s: %q does not match %s", at, x, s.Pattern)
			}
		}
		n := len([]rune(x))
		if s.MaxLength != nil && n > *s.MaxLength || s.MinLength != nil && n < *s.MinLength {
			return fmt.Errorf("%s: %q has the wrong length", at, x)
		}
	case []any:
		if s.Type != "" && s.Type != "array" {
			return fmt.Errorf("%s: an array, want %s", at, s.Type)
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems || s.MinItems != nil && len(x) < *s.MinItems {
			return fmt.Errorf("%s: %d items", at, len(x))
		}
		for i, e := range x {
			if err := g.check(s.Items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		if s.Type != "" && s.Type != "object" {
			return fmt.Errorf("%s: an object, want %s", at, s.Type)
		}
		if s.MaxProperties != nil && len(x) > *s.MaxProperties {
			return fmt.Errorf("%s: %d properties", at, len(x))
		}
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				return fmt.Errorf("%s: %s is required", at, r)
			}
		}
		for k, e := range x {
			p, ok := s.Properties[k]
			if !ok {
				switch extra := s.AdditionalProperties.(type) {
				case *schema.Schema:
					p = extra
				case bool:
					if !extra {
						return fmt.Errorf("%s: unknown property %s", at, k)
					}
				}
			}
			if err := g.check(p, e, at+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}
