package rust

import (
	"fmt"
	"strings"
	"testing"
)

func TestCodeTokens(t *testing.T) {
	src := `use std::collections::HashMap;
pub fn f<T: Clone + Send>(v: Vec<Vec<u8>>, n: usize) -> bool {
    let m: HashMap<u8, Vec<u8>> = HashMap::new();
    let x = v.iter().map(|a| a.len()).collect::<Vec<_>>();
    let c = || -n as i64 * 2;
    if n < 10 && x.len() >= 2 || n == 0 { return true; }
    v[n - 1].len() > 3
}

impl<T> Wrap<T> where T: Into<u64> + 'static {
    fn g(&self, a: u64, b: u64) -> Option<u64> { if a <= b { Some(a + b) } else { None } }
}

#[cfg(test)]
mod tests {
    #[test]
    fn t() { assert!(1 < 2 && false); }
}

#[test]
fn top() { assert!(3 > 4); }
`
	var got []string
	for _, ct := range CodeTokens([]byte(src)) {
		if src[ct.Start:ct.End] != ct.Text {
			t.Errorf("%q at %d-%d is %q in the source", ct.Text, ct.Start, ct.End, src[ct.Start:ct.End])
		}
		got = append(got, fmt.Sprintf("%d:%s:%s:%v:%s", ct.Line, ct.Text, kindName(ct.Kind), ct.Bounds, ct.Func))
	}
	want := []string{
		"5:*:arith:false:f", "5:2:int:false:f",
		"6:<:cmp:false:f", "6:10:int:true:f", "6:&&:logical:false:f", "6:>=:cmp:false:f", "6:2:int:true:f",
		"6:||:logical:false:f", "6:==:cmp:false:f", "6:0:int:true:f", "6:true:bool:false:f",
		"7:-:arith:false:f", "7:1:int:true:f", "7:>:cmp:false:f", "7:3:int:true:f",
		"11:<=:cmp:false:g", "11:+:arith:false:g",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CodeTokens:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func kindName(k OperandKind) string {
	return map[OperandKind]string{Comparison: "cmp", Logical: "logical", Arithmetic: "arith", Integer: "int", Bool: "bool"}[k]
}

func TestCodeTokensInnerTestFile(t *testing.T) {
	if got := CodeTokens([]byte("#![cfg(test)]\nfn f() -> bool { 1 < 2 }\n")); len(got) != 0 {
		t.Errorf("a test-only file has code tokens: %v", got)
	}
}
