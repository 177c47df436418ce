package verify

import "net/url"

// SARIF is the report as a SARIF 2.1.0 log for code-scanning UIs: one run
// whose invocation carries the verdict and the verification level reached
// and asked for (properties), and a result per reason and per finding
// (tampering, changed expectations, infrastructure, files not judged),
// each at its file and line where it has one. The caller writes it through
// the output boundary (sandbox/shown): its texts come from the change.
func (r *Report) SARIF() map[string]any {
	type msg struct {
		Text string `json:"text"`
	}
	results := []map[string]any{}
	add := func(rule, level, text, path string, line int) {
		res := map[string]any{"ruleId": rule, "level": level, "message": msg{text}}
		if path != "" {
			// A relative URI reference: every byte a path may hold that
			// would change what it refers to is percent-encoded.
			loc := map[string]any{"artifactLocation": map[string]any{"uri": (&url.URL{Path: path}).EscapedPath(), "uriBaseId": "%SRCROOT%"}}
			if line > 0 {
				loc["region"] = map[string]any{"startLine": line}
			}
			res["locations"] = []any{map[string]any{"physicalLocation": loc}}
		}
		results = append(results, res)
	}
	for _, rs := range r.Reasons {
		add("verdict/"+rs.Code, verdictLevel(r.Verdict), string(r.Verdict)+": "+rs.Message, "", 0)
	}
	for _, group := range []struct {
		level    string
		findings []Finding
	}{{"error", r.Tamper}, {"warning", r.ChangedExpectations}, {"warning", r.Unsupported}, {"note", r.Infrastructure}} {
		for _, f := range group.findings {
			add(f.Code, group.level, f.Message, f.Path, f.Line)
		}
	}
	props := map[string]any{"verdict": r.Verdict, "base": r.Base, "head": r.Head,
		"level": r.Level, "level_required": r.LevelRequired, "level_missing": r.LevelMissing}
	return map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "bcode-check",
				"informationUri": "https://github.com/bcode-dev/bcode",
			}},
			"invocations": []any{map[string]any{"executionSuccessful": r.Verdict != Error, "properties": props}},
			"properties":  props,
			"results":     results,
		}},
	}
}

// verdictLevel is the SARIF level of a verdict's reasons.
func verdictLevel(v Verdict) string {
	switch v {
	case Verified:
		return "note"
	case Green:
		return "warning"
	}
	return "error"
}
