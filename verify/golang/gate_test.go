package golang

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

// treeWorkspace lays out the two sides of a change from in-memory trees, so
// the gate can run this adapter without git.
type treeWorkspace struct {
	t          *testing.T
	base, head map[string]string
}

func (w treeWorkspace) Materialize(_ context.Context, side verify.Side, overlay []verify.FileChange) (string, error) {
	files := w.base
	if side == verify.HeadSide {
		files = w.head
	}
	dir := writeTree(w.t, files)
	for _, fc := range overlay {
		p := filepath.Join(dir, filepath.FromSlash(fc.Path))
		if fc.Head == nil {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, fc.Head, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (w treeWorkspace) ReadBase(_ context.Context, p string) ([]byte, error) {
	if c, ok := w.base[p]; ok {
		return []byte(c), nil
	}
	return nil, fs.ErrNotExist
}

func (w treeWorkspace) Close() error { return nil }

// TestGateWithGoAdapter runs the whole gate on real Go changes: a fix with
// a test that fails before is verified; a test of a function the change
// adds is only green.
func TestGateWithGoAdapter(t *testing.T) {
	t.Parallel()
	r := newRunner(t)
	base := map[string]string{
		"go.mod":            goMod,
		"calc/calc.go":      "package calc\n\nfunc Abs(x int) int { return x }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif Abs(2) != 2 {\n\t\tt.Fatal()\n\t}\n}\n",
	}
	cases := []struct {
		name       string
		code, test string
		want       verify.Verdict
	}{
		{"fix with a test that fails before", "package calc\n\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n",
			base["calc/calc_test.go"] + "\nfunc TestAbsNegative(t *testing.T) {\n\tif Abs(-3) != 3 {\n\t\tt.Fatal(Abs(-3))\n\t}\n}\n",
			verify.Verified},
		{"test of a function the change adds", base["calc/calc.go"] + "\nfunc Neg(x int) int { return -x }\n",
			base["calc/calc_test.go"] + "\nfunc TestNeg(t *testing.T) {\n\tif Neg(3) != -3 {\n\t\tt.Fatal()\n\t}\n}\n",
			verify.Green},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			head := map[string]string{"go.mod": goMod, "calc/calc.go": c.code, "calc/calc_test.go": c.test}
			change := changeOf(
				fileChange("calc/calc.go", base["calc/calc.go"], c.code),
				fileChange("calc/calc_test.go", base["calc/calc_test.go"], c.test),
			)
			change.Workspace = treeWorkspace{t: t, base: base, head: head}
			g := &verify.Gate{Runner: r, Adapters: []verify.Adapter{New()}}
			rep, err := g.Check(context.Background(), change, config.Default())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != c.want {
				t.Fatalf("verdict %s, want %s: %+v", rep.Verdict, c.want, rep)
			}
		})
	}
}
