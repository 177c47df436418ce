package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/bcode-dev/bcode/config"
)

// Each level reached and each missed, with the verdict the base's
// verify.level makes of it.
func TestGateLevels(t *testing.T) {
	o := outcomes
	tC := Test{Language: "fake", Package: ".", File: "x_test", Name: "C"}
	cases := []struct {
		name    string
		s       scripted
		oracle  []Test
		ask     string
		want    Verdict
		level   Level
		missing string // in LevelMissing
	}{
		{name: "V3 reached", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Pass), old: o("B", Pass)},
			ask: "V3", want: Verified, level: LevelV3},
		{name: "V3 missed: a test fails on both sides", s: scripted{pristine: o("B", Pass, "D", Fail), base: o("A", Fail, "B", Pass, "D", Fail), head: o("A", Pass, "B", Pass, "D", Fail), old: o("B", Pass, "D", Fail)},
			ask: "V3", want: Green, level: LevelV2, missing: "D"},
		{name: "V2 reached beside a pre-existing failure", s: scripted{pristine: o("B", Pass, "D", Fail), base: o("A", Fail, "B", Pass, "D", Fail), head: o("A", Pass, "B", Pass, "D", Fail), old: o("B", Pass, "D", Fail)},
			ask: "V2", want: Verified, level: LevelV2, missing: "V3:"},
		{name: "V2 missed: a pass-to-pass regression", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Fail), old: o("B", Fail)},
			ask: "V2", want: Failed, level: LevelV1, missing: "pass-to-pass regressions: "},
		{name: "V1 reached: the regression does not hold it back", s: scripted{pristine: o("B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Fail), old: o("B", Fail)},
			ask: "V1", want: Verified, level: LevelV1, missing: "V2: pass-to-pass regressions"},
		{name: "V1 asked, a regression and a rewritten expectation: the rewrite still holds it green", s: scripted{pristine: o("A", Pass, "B", Pass), base: o("A", Fail, "B", Pass), head: o("A", Pass, "B", Fail), old: o("A", Fail, "B", Fail)},
			ask: "V1", want: Green, level: LevelV1, missing: "V2: pass-to-pass regressions"},
		{name: "V1 missed: nothing flips", s: scripted{pristine: o("A", Pass), base: o("A", Pass), head: o("A", Pass), old: o("A", Pass)},
			ask: "V1", want: Green, level: LevelNone, missing: "V1: no test fails on the base"},
		{name: "V1 missed: a flaky flip", s: scripted{pristine: o(), base: o("A", Fail), head: o("A", Pass), old: o(), flakyHead: "A"},
			ask: "V1", want: Green, level: LevelNone, missing: "V1:"},
		{name: "oracle flips: V2", s: scripted{pristine: o("C", Fail), base: o("C", Fail), head: o("C", Pass), old: o("C", Pass)},
			oracle: []Test{tC}, ask: "V2", want: Verified, level: LevelV3},
		{name: "oracle stuck: another credited test is not enough", s: scripted{pristine: o("C", Fail), base: o("A", Fail, "C", Fail), head: o("A", Pass, "C", Fail), old: o("C", Fail)},
			oracle: []Test{tC}, ask: "V1", want: Green, level: LevelNone, missing: "oracle test(s) that do not flip from fail to pass in every run: fake:.:C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			g := &Gate{Runner: nameRunner{}, Adapters: []Adapter{&s}, Oracle: c.oracle}
			cfg := config.Default()
			cfg.Verify.Level = c.ask
			rep, err := g.Check(context.Background(), codeAndTestChange(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != c.want || rep.Level != c.level || string(rep.LevelRequired) != c.ask {
				t.Fatalf("verdict %s at %s (asked %s), want %s at %s; missing %q; reasons %+v; tests %+v", rep.Verdict, rep.Level, rep.LevelRequired, c.want, c.level, rep.LevelMissing, rep.Reasons, rep.Tests)
			}
			if !strings.Contains(rep.LevelMissing, c.missing) {
				t.Errorf("missing %q, want it to say %q", rep.LevelMissing, c.missing)
			}
			if c.level == LevelV3 && rep.LevelMissing != "" {
				t.Errorf("V3 reached, yet missing %q", rep.LevelMissing)
			}
			if c.want == Green && c.level.rank() < Level(c.ask).rank() && rep.Verdict == Green && len(rep.Credited()) > 0 && !hasCode(rep, ReasonLevelNotReached) {
				t.Errorf("a credited change below the asked level must say so: %+v", rep.Reasons)
			}
			for _, tr := range rep.Tests {
				if tr.Name == "C" && len(c.oracle) > 0 && !tr.Oracle {
					t.Errorf("oracle test not marked: %+v", tr)
				}
			}
		})
	}
}
