package verify

import "github.com/bcode-dev/bcode/config"

// setInfrastructureAside moves the change's CI-definition findings out of
// the tamper findings into Report.Infrastructure when the base's config
// lets them stand beside the verdict (config.Gate.BlocksInfrastructure):
// a person who moves CI from one service to another has changed where the
// suite runs for others, which a reviewer should see, but not what the
// tests established. For an agent's task they block, as every tamper
// finding does. It is the one place that decides; the verdict's steps
// call it before they weigh the tamper findings.
func (g *Gate) setInfrastructureAside(rep *Report, cfg config.Config) {
	if cfg.Gate.BlocksInfrastructure(g.AgentTask) {
		return
	}
	kept := rep.Tamper[:0:0]
	for _, f := range rep.Tamper {
		if f.Code == FindingCIChanged {
			rep.Infrastructure = append(rep.Infrastructure, f)
			continue
		}
		kept = append(kept, f)
	}
	if kept == nil {
		kept = []Finding{}
	}
	rep.Tamper = kept
}
