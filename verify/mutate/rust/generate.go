package rust

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/bcode-dev/bcode/verify"
	"github.com/bcode-dev/bcode/verify/mutate"
	rustadapter "github.com/bcode-dev/bcode/verify/rust"
)

// Rust-only operators, beside the shared ones (mutate.Op*), named as the
// JavaScript engine names them.
const (
	OpLogicalOperator = "logical_operator" // && <-> ||
	OpArithOperator   = "arith_operator"   // + <-> -, * <-> /
)

// maxSource caps a changed source read.
const maxSource = 4 << 20

// boundary and negation are the comparison swaps the other engines make.
var (
	boundary = map[string]string{"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
	negation = map[string]string{"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
	logical  = map[string]string{"&&": "||", "||": "&&"}
	arith    = map[string]string{"+": "-", "-": "+", "*": "/", "/": "*"}
)

// rsFile is one changed Rust source.
type rsFile struct {
	rel     string
	src     []byte
	units   []string      // the test targets its crate reaches
	tests   []verify.Test // their tests that passed on the head
	mutants []*rsMutant
}

// rsMutant is a mutant and where its text goes.
type rsMutant struct {
	*mutate.Mutant
	file       *rsFile
	start, end int
}

// generate reads the changed files and finds their mutants.
func (j *job) generate(changed []verify.FileChange) {
	rep := j.s.Report
	for _, fc := range changed {
		src, err := mutate.ReadBeneath(j.s.Root, filepath.Join(j.s.Root, filepath.FromSlash(fc.Path)), maxSource)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", fc.Path, err))
			continue
		}
		f := &rsFile{rel: fc.Path, src: src}
		seen := mutate.IDs{}
		for _, ct := range rustadapter.CodeTokens(src) {
			if !onChanged(ct.Line, fc.Changed) {
				continue
			}
			for _, mu := range mutations(ct) {
				m := &mutate.Mutant{File: f.rel, Func: ct.Func, Operator: mu[0], Original: ct.Text, Mutated: mu[1]}
				m.Line, m.Col = position(src, ct.Start)
				m.EndLine, m.EndCol = position(src, ct.End)
				seen.Assign(m)
				rep.Stats.Generated++
				f.mutants = append(f.mutants, &rsMutant{Mutant: m, file: f, start: ct.Start, end: ct.End})
			}
		}
		if len(f.mutants) > 0 {
			j.files = append(j.files, f)
		}
	}
}

// mutations are a token's mutants: operator and mutated text.
func mutations(ct rustadapter.CodeToken) [][2]string {
	switch ct.Kind {
	case rustadapter.Comparison:
		if b := boundary[ct.Text]; b != "" {
			return [][2]string{{mutate.OpConditionalBoundary, b}, {mutate.OpRelationalNegation, negation[ct.Text]}}
		}
		return [][2]string{{mutate.OpRelationalNegation, negation[ct.Text]}}
	case rustadapter.Logical:
		return [][2]string{{OpLogicalOperator, logical[ct.Text]}}
	case rustadapter.Arithmetic:
		return [][2]string{{OpArithOperator, arith[ct.Text]}}
	case rustadapter.Bool:
		if ct.Text == "true" {
			return [][2]string{{mutate.OpBoolLiteral, "false"}}
		}
		return [][2]string{{mutate.OpBoolLiteral, "true"}}
	case rustadapter.Integer:
		v, err := strconv.ParseInt(ct.Text, 10, 64)
		if err != nil || !ct.Bounds {
			return nil
		}
		out := [][2]string{{mutate.OpConstantBound, strconv.FormatInt(v+1, 10)}}
		if v > 0 { // -1 would be a unary minus, which an unsigned type refuses
			out = append(out, [2]string{mutate.OpConstantBound, strconv.FormatInt(v-1, 10)})
		}
		return out
	}
	return nil
}

func onChanged(line int, changed []verify.LineRange) bool {
	for _, r := range changed {
		if line >= r.Start && line <= r.End {
			return true
		}
	}
	return false
}

// position is the 1-based line and byte column of off in src.
func position(src []byte, off int) (int, int) {
	line, col := 1, 1
	for _, c := range src[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
