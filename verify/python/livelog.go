package python

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bcode-dev/bcode/verify/testlog"
)

// logAltered says why a run's outcomes cannot be taken as its tests' own:
// lines of the log the plugin did not sign (testlog.Authentic), or the
// plugin's "altered" records (the code deciding outcomes replaced by the
// snapshot's). "" when neither.
func logAltered(log []byte, forged int) string {
	var why []string
	if forged > 0 {
		why = append(why, testlog.Forged(forged))
	}
	for _, line := range bytes.Split(log, []byte("\n")) {
		var rec struct {
			When string `json:"when"`
			Text string `json:"text"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.When == "altered" {
			why = append(why, rec.Text)
		}
	}
	return strings.Join(why, "; ")
}
