package mutate

import "testing"

// TestIDsAssign pins the ID recipe every engine uses: a mutant's content
// and its occurrence, never its line (values computed outside Go).
func TestIDsAssign(t *testing.T) {
	ids := IDs{}
	a := &Mutant{File: "f.go", Func: "F", Operator: OpConditionalBoundary, Original: "<", Mutated: "<=", Line: 3}
	b := *a
	b.Line = 90
	if o := ids.Assign(a); o != 0 || a.ID != "98d6907bd542c54a" {
		t.Errorf("first: occurrence %d, ID %s", o, a.ID)
	}
	if o := ids.Assign(&b); o != 1 || b.ID != "49560daf51f8d17e" {
		t.Errorf("second: occurrence %d, ID %s", o, b.ID)
	}
}
