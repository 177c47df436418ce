package toolcall

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Spec is a tool as described to the model.
type Spec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// FallbackPrompt tells a model without native tool calling which tools it
// has and the one text form to call them in, the XML function-call form
// Qwen- and Hermes-style models are trained on. It goes into the system
// message.
func FallbackPrompt(tools []Spec) string {
	var b strings.Builder
	b.WriteString("# Tools\n\nYou can call these tools. Each is described with a JSON Schema of its parameters.\n\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "## %s\n%s\nParameters: %s\n\n", t.Name, t.Description, compactJSON(t.Parameters))
	}
	b.WriteString(`To call a tool, write exactly this, with one <parameter> block per argument:

<tool_call>
<function=TOOL_NAME>
<parameter=ARGUMENT_NAME>
value
</parameter>
</function>
</tool_call>

Write text values as they are, without quotes or escaping. You may call several tools in one reply; the results come back in the next message. A call that does not follow this form or does not fit the schema is not run, and you get the error instead.
`)
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
