package rust

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/internal/testrepo"
	"github.com/bcode-dev/bcode/verify"
)

// cargoWorkspace is a virtual workspace: core (a library with a unit test
// and a doc test) and app (a binary with a unit test and a bin of its own
// in src/bin), app depending on core by path.
var cargoWorkspace = map[string]string{
	"Cargo.toml":           "[workspace]\nmembers = [\"core\", \"app\"]\nresolver = \"2\"\n",
	"core/Cargo.toml":      "[package]\nname = \"core2\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
	"core/src/lib.rs":      "/// ```\n/// assert_eq!(core2::double(2), 4);\n/// ```\npub fn double(x: i64) -> i64 {\n    x * 2\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(3), 6);\n    }\n}\n",
	"app/Cargo.toml":       "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncore2 = { path = \"../core\" }\n",
	"app/src/main.rs":      "fn main() {\n    println!(\"{}\", core2::double(1));\n}\n\n#[test]\nfn runs() {\n    assert_eq!(core2::double(0), 0);\n}\n",
	"app/src/bin/extra.rs": "fn main() {}\n\n#[test]\nfn runs() {\n    panic!(\"the other bin\");\n}\n",
}

func TestWorkspaceSuiteAndDocTests(t *testing.T) {
	t.Parallel()
	dir := testrepo.FromFiles(t, cargoWorkspace).Dir
	a, r := newAdapter(), newRunner(t)
	res, err := a.RunSuite(t.Context(), r, dir, nil, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]verify.Outcome{}
	for _, x := range res.Results {
		got[x.Test.ID()] = x.Outcome
	}
	for id, want := range map[string]verify.Outcome{
		"rust:core/src/lib.rs:tests::doubles":           verify.Pass,
		"rust:core/src/lib.rs:core/src/lib.rs - double": verify.Pass,
		"rust:app/src/main.rs:runs":                     verify.Pass,
		"rust:app/src/bin/extra.rs:runs":                verify.Fail,
	} {
		if got[id] != want {
			t.Errorf("suite: %s %q, want %s (all: %v)", id, got[id], want, got)
		}
	}
	if res.Outcome != verify.Fail || !slices.Contains(res.Failed, "rust:app/src/bin/extra.rs:runs") {
		t.Errorf("suite: %s, failed %v, want fail naming the other bin's test", res.Outcome, res.Failed)
	}
	// RunTests on src/main.rs runs that bin only, and doc tests by name.
	out, err := a.RunTests(t.Context(), r, dir, []verify.Test{
		{Language: "rust", Package: "app/src/main.rs", Name: "runs"},
		{Language: "rust", Package: "core/src/lib.rs", Name: "core/src/lib.rs - double"},
	}, verify.RunOptions{Count: 1, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Outcome != verify.Pass || out[1].Outcome != verify.Pass {
		var s []string
		for _, x := range out {
			s = append(s, x.Test.ID()+" "+string(x.Outcome)+" "+x.Detail)
		}
		t.Errorf("RunTests = %s, want both to pass", strings.Join(s, "\n"))
	}
}
