package tamper

import (
	"slices"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
	"github.com/bcode-dev/bcode/verify"
)

const baseMakefile = `# build and test
GO ?= go
TESTFLAGS := -race -count=1
VERSION = 1.0

.PHONY: all build test lint check-fmt

all: build test

build:
	$(GO) build ./...

test: build
	$(GO) test $(TESTFLAGS) \
		./...

lint:
	golangci-lint run

check-fmt:
	gofmt -l . | tee /dev/stderr | (! read)

ci:
	pytest -q tests
`

func TestMakefileTargets(t *testing.T) {
	tests := []struct {
		name      string
		file      verify.FileChange
		want      []want
		inMessage string
	}{
		{
			name: "unrelated edits are not tamper",
			file: modified("Makefile", baseMakefile, strings.NewReplacer(
				"VERSION = 1.0", "VERSION = 1.1",
				"golangci-lint run", "golangci-lint run --fix",
				"$(GO) build ./...", "$(GO) build -trimpath ./...",
				"# build and test", "# build, lint and test",
			).Replace(baseMakefile)),
		},
		{
			name:      "test recipe weakened",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, "$(TESTFLAGS) \\\n\t\t./...", "-run XXX ./...", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 13}},
			inMessage: `"test": recipe changed`,
		},
		{
			name:      "continuation line of a test recipe changed",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, "\t\t./...", "\t\t./cmd/...", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 13}},
			inMessage: "recipe changed",
		},
		{
			name:      "test prerequisites changed",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, "test: build", "test:", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 13}},
			inMessage: "prerequisites changed",
		},
		{
			name: "test target deleted",
			file: modified("Makefile", baseMakefile, strings.Replace(baseMakefile,
				"test: build\n\t$(GO) test $(TESTFLAGS) \\\n\t\t./...\n", "", 1)),
			// "all" depends on test, but only the test rule itself changed.
			want:      []want{{verify.FindingTestInfra, "Makefile", 0}},
			inMessage: `"test" deleted (line 13 on base)`,
		},
		{
			name:      "check-named target changed",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, "(! read)", "true", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 20}},
			inMessage: `"check-fmt"`,
		},
		{
			name:      "target that runs pytest, whatever its name",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, "pytest -q tests", "echo ok", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 23}},
			inMessage: `"ci"`,
		},
		{
			name:      "variable a test recipe expands",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, "TESTFLAGS := -race -count=1", "TESTFLAGS := -run NONE", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 13}},
			inMessage: "variable TESTFLAGS",
		},
		{
			name:      "test dropped from .PHONY",
			file:      modified("Makefile", baseMakefile, strings.Replace(baseMakefile, ".PHONY: all build test lint", ".PHONY: all build lint", 1)),
			want:      []want{{verify.FindingTestInfra, "Makefile", 13}},
			inMessage: "no longer .PHONY",
		},
		{
			name: "later recipe overrides the test recipe",
			file: modified("Makefile", baseMakefile, baseMakefile+"\ntest:\n\t@echo skipped\n"),
			want: []want{{verify.FindingTestInfra, "Makefile", 13}},
		},
		{
			name: "new test target is not tamper",
			file: modified("Makefile", baseMakefile, baseMakefile+"\ntest-integration:\n\tgo test -tags integration ./...\n"),
		},
		{
			name: "Makefile deleted reports every test target",
			file: deleted("Makefile", baseMakefile),
			want: []want{
				{verify.FindingTestInfra, "Makefile", 0},
				{verify.FindingTestInfra, "Makefile", 0},
				{verify.FindingTestInfra, "Makefile", 0},
			},
		},
		{
			name: "included .mk file",
			file: modified("build/test.mk", "unit-test:\n\tgo test ./...\n", "unit-test:\n\t@true\n"),
			want: []want{{verify.FindingTestInfra, "build/test.mk", 1}},
		},
		{
			name: "inline recipe after a semicolon",
			file: modified("GNUmakefile", "test: ; go test ./...\n", "test: ; go vet ./...\n"),
			want: []want{{verify.FindingTestInfra, "GNUmakefile", 1}},
		},
		{
			name: "CRLF line endings and comments do not matter",
			file: modified("makefile", "test:\n\tgo test ./...\n", "# tests\r\ntest: # run them\r\n\tgo test ./...\r\n"),
		},
		{
			name: "a file that is not a makefile",
			file: modified("docs/Makefile.md", "test:\n\tgo test\n", ""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(&verify.Change{Files: []verify.FileChange{tt.file}}, config.Default())
			if !equalWants(codes(got), tt.want) {
				t.Fatalf("findings:\n got %v\nwant %v\n%v", codes(got), tt.want, got)
			}
			if tt.inMessage != "" && !strings.Contains(got[0].Message, tt.inMessage) {
				t.Errorf("message %q does not mention %q", got[0].Message, tt.inMessage)
			}
		})
	}
}

func TestParseMakefile(t *testing.T) {
	mf := parseMakefile([]byte(baseMakefile + `
define HELP
test: this is text, not a rule
endef

a b: c ; echo inline
	echo second
pattern/%.o: %.c
	cc -c $<
x := $(patsubst %.c,%.o,$(SRC))
`))
	if _, ok := mf.rules["test"]; !ok {
		t.Fatal("test rule not parsed")
	}
	if got := mf.rules["test"].recipe; !slices.Equal(got, []string{"$(GO) test $(TESTFLAGS)  \t\t./..."}) {
		t.Errorf("test recipe = %q", got)
	}
	if got := mf.rules["all"].deps; !slices.Equal(got, []string{"build", "test"}) {
		t.Errorf("all deps = %q", got)
	}
	for _, target := range []string{"a", "b"} {
		r := mf.rules[target]
		if r == nil || !slices.Equal(r.recipe, []string{"echo inline", "echo second"}) || !slices.Equal(r.deps, []string{"c"}) {
			t.Errorf("rule %s = %+v", target, r)
		}
	}
	if _, ok := mf.rules["pattern/%.o"]; !ok {
		t.Error("pattern rule not parsed")
	}
	if _, ok := mf.rules[".PHONY"]; ok {
		t.Error(".PHONY parsed as a rule")
	}
	if !mf.phony["test"] || !mf.phony["check-fmt"] || mf.phony["ci"] {
		t.Errorf("phony = %v", mf.phony)
	}
	if _, ok := mf.rules["test: this is text, not a rule"]; ok || len(mf.vars["HELP"]) != 2 {
		t.Errorf("define block misread: vars[HELP] = %q", mf.vars["HELP"])
	}
	for name, want := range map[string]string{"GO": "?= go", "TESTFLAGS": ":= -race -count=1", "x": ":= $(patsubst %.c,%.o,$(SRC))"} {
		if got := mf.vars[name]; len(got) != 1 || got[0] != want {
			t.Errorf("vars[%s] = %q, want %q", name, got, want)
		}
	}
	if got := referencedVars(mf.rules["test"], mf); !slices.Equal(got, []string{"GO", "TESTFLAGS"}) {
		t.Errorf("referencedVars(test) = %q", got)
	}
}

// TestNewMakefileShadowsBase: GNU make reads GNUmakefile before Makefile, so
// adding one with an empty test target silently replaces the real one.
func TestNewMakefileShadowsBase(t *testing.T) {
	r := newGitRepo(t)
	r.WriteFile("Makefile", "test:\n\tgo test ./...\n")
	r.WriteFile("sub/Makefile", "build:\n\tgo build\n")
	base := r.Commit("base")
	r.WriteFile("GNUmakefile", "test:\n\t@echo all good\n")
	r.WriteFile("sub/GNUmakefile", "build:\n\tgo build -v\n")
	head := r.Commit("shadow")

	got := Check(r.change(base, head), config.Default())
	want := []want{{verify.FindingTestInfra, "GNUmakefile", 1}}
	if !equalWants(codes(got), want) {
		t.Fatalf("got %v want %v", codes(got), want)
	}
	if !strings.Contains(got[0].Message, "GNUmakefile now takes precedence over Makefile") {
		t.Errorf("message %q does not explain the shadowing", got[0].Message)
	}
}
