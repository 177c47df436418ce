package server

import (
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/server/lsp"
)

func TestBytePosCountsUTF16(t *testing.T) {
	text := "package p\n\tx := \"π🛒\" + y\n"
	// Byte column of "y" on line 2: tab(1) x(1) ' '(1) :=(2) ' '(1) "(1) π(2) 🛒(4) "(1) ' '(1) +(1) ' '(1) = 17, so col 18.
	col := strings.Index(strings.Split(text, "\n")[1], "y") + 1
	p, ok := bytePos(text, 2, col)
	// UTF-16: 1+1+1+2+1+1+1(π)+2(🛒)+1+1+1+1 = 14.
	if !ok || p != (lsp.Position{Line: 1, Character: 14}) {
		t.Fatalf("bytePos = %+v %v, want line 1 character 14", p, ok)
	}
	if off := offsetOf(text, p); text[off:off+1] != "y" {
		t.Errorf("offsetOf(%+v) = %d (%q), want the y", p, off, text[off:])
	}
	if _, ok := bytePos(text, 9, 1); ok {
		t.Errorf("a line past the end is not a position")
	}
}

func TestApplyChange(t *testing.T) {
	text := "a🛒b\nsecond\n"
	// Replace "b" (after the emoji: character 3 in UTF-16) with "c".
	got := applyChange(text, lsp.ContentChange{Range: &lsp.Range{Start: lsp.Position{Line: 0, Character: 3}, End: lsp.Position{Line: 0, Character: 4}}, Text: "c"})
	if got != "a🛒c\nsecond\n" {
		t.Errorf("got %q", got)
	}
	if got := applyChange(text, lsp.ContentChange{Text: "whole"}); got != "whole" {
		t.Errorf("full replacement gave %q", got)
	}
	// A range past the end clamps instead of panicking.
	got = applyChange(text, lsp.ContentChange{Range: &lsp.Range{Start: lsp.Position{Line: 7}, End: lsp.Position{Line: 9}}, Text: "!"})
	if got != text+"!" {
		t.Errorf("past-the-end insert gave %q", got)
	}
}

func TestFollow(t *testing.T) {
	src := "a\nb\nmutant line\nc\n"
	if d, ok := follow(src, src, 3, 3); !ok || d != 0 {
		t.Errorf("same text: %d %v", d, ok)
	}
	if d, ok := follow(src, "new\na\nb\nmutant line\nc\n", 3, 3); !ok || d != 1 {
		t.Errorf("one line inserted above: %d %v", d, ok)
	}
	if _, ok := follow(src, "a\nb\nedited line\nc\n", 3, 3); ok {
		t.Errorf("an edited line must not be followed")
	}
}
