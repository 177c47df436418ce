package javascript

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/tdewolff/parse/v2/js"
)

// eachRow is one row of a test.each/it.each/describe.each table: the name
// the runner gives it and the row's syntax, printed (a changed row is a
// changed test even when its name stays).
type eachRow struct {
	name string
	text string
}

// literal is a table cell whose value is known without running the file.
type literal struct {
	str   string // the value as String(x) prints it
	isStr bool
	num   float64
	isNum bool
	json  string // JSON.stringify(x)
}

// eachRows expands a .each table that is an array literal of literal rows
// into its rows' names, the way vitest and jest format them: printf-style
// %s %d %i %f %j %# %$ %% for array rows (or a single value per row), and
// $key for object rows. Anything else (a template-literal table, a
// variable, %p or %o, a computed cell) is not expandable: ok is false.
func eachRows(name string, table js.IExpr) (rows []eachRow, ok bool) {
	arr, isArr := table.(*js.ArrayExpr)
	if !isArr {
		return nil, false
	}
	for i, el := range arr.List {
		if el.Value == nil || el.Spread {
			return nil, false
		}
		var b bytes.Buffer
		el.Value.JS(&b)
		var n string
		switch v := el.Value.(type) {
		case *js.ObjectExpr:
			n, ok = objectRowName(name, v, i)
		case *js.ArrayExpr:
			var cells []js.IExpr
			for _, c := range v.List {
				if c.Value == nil || c.Spread {
					return nil, false
				}
				cells = append(cells, c.Value)
			}
			n, ok = printfRowName(name, cells, i)
		default:
			n, ok = printfRowName(name, []js.IExpr{v}, i)
		}
		if !ok {
			return nil, false
		}
		rows = append(rows, eachRow{name: n, text: strconv.Itoa(i) + ":" + b.String() + "\n"})
	}
	return rows, true
}

// printfRowName formats name with a row's cells as printf arguments.
func printfRowName(name string, cells []js.IExpr, index int) (string, bool) {
	var out strings.Builder
	next := 0
	for i := 0; i < len(name); i++ {
		if name[i] != '%' || i+1 == len(name) {
			out.WriteByte(name[i])
			continue
		}
		verb := name[i+1]
		i++
		switch verb {
		case '%':
			out.WriteByte('%')
			continue
		case '#':
			out.WriteString(strconv.Itoa(index))
			continue
		case '$':
			out.WriteString(strconv.Itoa(index + 1))
			continue
		case 's', 'd', 'i', 'f', 'j':
		default:
			return "", false // %p, %o and the like print objects as the runner's own formatter does
		}
		if next >= len(cells) {
			out.WriteByte('%')
			out.WriteByte(verb)
			continue
		}
		lit, ok := literalValue(cells[next])
		next++
		if !ok {
			return "", false
		}
		s, ok := formatVerb(verb, lit)
		if !ok {
			return "", false
		}
		out.WriteString(s)
	}
	return out.String(), true
}

// formatVerb prints one literal for a printf verb.
func formatVerb(verb byte, lit literal) (string, bool) {
	switch verb {
	case 's':
		return lit.str, true
	case 'j':
		return lit.json, true
	case 'd', 'i', 'f':
		if !lit.isNum {
			return "", false
		}
		n := lit.num
		if verb == 'i' {
			n = math.Trunc(n)
		}
		return jsNumber(n), true
	}
	return "", false
}

// objectRowName substitutes $key (and %# and $#) in name with the row's
// literal properties: numbers, booleans and null, which both runners
// print as String(x) does.
func objectRowName(name string, row *js.ObjectExpr, index int) (string, bool) {
	props := map[string]literal{}
	for _, p := range row.List {
		if p.Name == nil || p.Spread || p.Name.IsComputed() {
			return "", false
		}
		key := p.Name.String()
		if s, ok := unquote([]byte(key)); ok && (key[0] == '"' || key[0] == '\'') {
			key = s
		}
		if lit, ok := literalValue(p.Value); ok {
			props[key] = lit
		}
	}
	var out strings.Builder
	for i := 0; i < len(name); i++ {
		switch {
		case name[i] == '%' && i+1 < len(name) && (name[i+1] == '#' || name[i+1] == '%'):
			if name[i+1] == '#' {
				out.WriteString(strconv.Itoa(index))
			} else {
				out.WriteByte('%')
			}
			i++
		case name[i] == '$' && i+1 < len(name) && name[i+1] == '#':
			out.WriteString(strconv.Itoa(index))
			i++
		case name[i] == '$':
			j := i + 1
			for j < len(name) && (isIdentByte(name[j]) || name[j] == '.') {
				j++
			}
			key := name[i+1 : j]
			if key == "" {
				out.WriteByte('$')
				continue
			}
			lit, ok := props[key]
			if !ok || lit.isStr {
				// A nested path or a value only the run knows; a string,
				// which jest quotes "so" and vitest 'so'.
				return "", false
			}
			out.WriteString(lit.str)
			i = j - 1
		default:
			out.WriteByte(name[i])
		}
	}
	return out.String(), true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// literalValue reads a string, number, boolean or null literal (a number
// may be negated).
func literalValue(e js.IExpr) (literal, bool) {
	if u, ok := e.(*js.UnaryExpr); ok && u.Op == js.NegToken {
		lit, ok := literalValue(u.X)
		if !ok || !lit.isNum {
			return literal{}, false
		}
		n := -lit.num
		return literal{str: jsNumber(n), num: n, isNum: true, json: jsNumber(n)}, true
	}
	if s, ok := literalString(e); ok {
		j, _ := json.Marshal(s)
		return literal{str: s, isStr: true, json: string(j)}, true
	}
	lit, ok := e.(*js.LiteralExpr)
	if !ok {
		return literal{}, false
	}
	switch lit.TokenType {
	case js.TrueToken, js.FalseToken, js.NullToken:
		return literal{str: string(lit.Data), json: string(lit.Data)}, true
	case js.DecimalToken, js.IntegerToken:
		n, err := strconv.ParseFloat(strings.ReplaceAll(string(lit.Data), "_", ""), 64)
		if err != nil || math.IsInf(n, 0) {
			return literal{}, false
		}
		return literal{str: jsNumber(n), num: n, isNum: true, json: jsNumber(n)}, true
	}
	return literal{}, false
}

// jsNumber prints n as JavaScript's String(n) does for the numbers tables
// hold (integers and plain decimals; exponents as Go prints them).
func jsNumber(n float64) string {
	if n == 0 {
		return "0" // String(-0) is "0"
	}
	if a := math.Abs(n); a >= 1e21 || a < 1e-6 {
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	return strconv.FormatFloat(n, 'f', -1, 64)
}
