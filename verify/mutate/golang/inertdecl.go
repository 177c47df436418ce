package golang

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// keyFile is one file the baseline's cache key hashes.
type keyFile struct {
	rel  string // relative to the module root, slash-separated
	data []byte
	own  bool // a non-test Go file of the package itself
}

// sourceReaders are texts in a Go file that may read the package's own Go
// sources at run time (a test that parses, globs or embeds them). Where
// one occurs, no declaration is dropped from the key: such a test could see
// the declarations the key leaves out.
var sourceReaders = []string{
	`.go"`, `"go/parser"`, `"go/build"`, `"go/packages"`, `"go/format"`, "go:embed", "go:linkname",
	"ReadDir", "Glob(", "Walk(", "WalkDir(", "runtime.Caller", "os.DirFS", "debug/",
}

// keyContent is files as the key hashes them. A package's own non-test
// file is hashed up to the end of its last declaration that is not inert
// (inertTail): trailing comments and inert declarations are left out, when
// every name those declare occurs once among them and nowhere in the hashed
// files (so no code the tests run can name one: scopes, selectors and
// linknames stay as they were) and no Go file may read Go sources. What is
// left out changes nothing a test can observe: the program is the same but
// for package variables nothing reads, initialized from literals that
// compile on intBits-bit platforms and have no side effects. Otherwise
// every file is hashed as it is.
func keyContent(files []keyFile, intBits int) []keyFile {
	keep := map[int][]byte{}
	var names []string
	for i, f := range files {
		if f.own {
			if k, ns, ok := inertTail(f.data, intBits); ok {
				keep[i] = k
				names = append(names, ns...)
			}
		}
	}
	if len(keep) == 0 {
		return files
	}
	once := map[string]bool{}
	for _, n := range names {
		if once[n] {
			return files // declared twice: the build fails, the key must not hide it
		}
		once[n] = true
	}
	out := append([]keyFile(nil), files...)
	for i, k := range keep {
		out[i].data = k
	}
	for _, f := range out {
		if strings.HasSuffix(f.rel, ".go") {
			for _, r := range sourceReaders {
				if bytes.Contains(f.data, []byte(r)) {
					return files
				}
			}
		}
		for _, n := range names {
			if bytes.Contains(f.data, []byte(n)) {
				return files
			}
		}
	}
	return out
}

// inertTail returns src up to the end of its last declaration that is not
// inert, and the names the inert ones after it declare. Inert: a const or
// var declaration without a type or directive whose values are each a
// string literal or an int literal (one value per name; a var's int must
// fit in intBits bits, or it would not build). ok is false when src does
// not parse or has no declaration that is not inert.
func inertTail(src []byte, intBits int) (keep []byte, names []string, ok bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, false
	}
	cut := len(f.Decls)
	for cut > 0 {
		d, ok := f.Decls[cut-1].(*ast.GenDecl)
		if !ok || !inertDecl(d, intBits) {
			break
		}
		cut--
	}
	if cut == 0 {
		return nil, nil, false
	}
	for _, d := range f.Decls[cut:] {
		for _, sp := range d.(*ast.GenDecl).Specs {
			for _, n := range sp.(*ast.ValueSpec).Names {
				if n.Name != "_" {
					names = append(names, n.Name)
				}
			}
		}
	}
	return src[:fset.Position(f.Decls[cut-1].End()).Offset], names, true
}

// inertDecl reports whether d is an inert declaration (see inertTail).
func inertDecl(d *ast.GenDecl, intBits int) bool {
	if d.Tok != token.CONST && d.Tok != token.VAR {
		return false
	}
	if d.Doc != nil {
		for _, c := range d.Doc.List {
			if strings.HasPrefix(c.Text, "//go:") || strings.HasPrefix(c.Text, "//export") || strings.HasPrefix(c.Text, "//line") {
				return false
			}
		}
	}
	for _, sp := range d.Specs {
		v := sp.(*ast.ValueSpec)
		if v.Type != nil || len(v.Values) != len(v.Names) {
			return false
		}
		for _, e := range v.Values {
			lit, ok := e.(*ast.BasicLit)
			if !ok || !inertLiteral(lit, d.Tok, intBits) {
				return false
			}
		}
	}
	return true
}

// inertLiteral: a literal that compiles as the value of an untyped
// declaration of tok where int has intBits bits.
func inertLiteral(lit *ast.BasicLit, tok token.Token, intBits int) bool {
	switch lit.Kind {
	case token.STRING:
		_, err := strconv.Unquote(lit.Value)
		return err == nil
	case token.INT:
		_, err := strconv.ParseInt(strings.ReplaceAll(lit.Value, "_", ""), 0, intBits)
		return err == nil || tok == token.CONST && strings.Trim(lit.Value, "0123456789_") == ""
	}
	return false
}
