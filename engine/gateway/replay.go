package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/bcode-dev/bcode/engine"
	"github.com/bcode-dev/bcode/engine/gateway/wire"
)

// Transcript is a conversation rebuilt from the ledger's event log.
type Transcript struct {
	// Messages are the assistant turns and tool results, in order, ready
	// to hand to a resumed agent (the task prompt is rebuilt by it).
	Messages []wire.ChatMessage
	Turns    int
	Tokens   int
	// Interrupted lists calls whose action was recorded but whose
	// observation never was: the runner died while they ran. They are not
	// re-run; the model is told they were interrupted.
	Interrupted []string
	// Finished is set when the agent had already finished.
	Finished bool
}

// InterruptedOutput is the observation given for a call cut off by a crash.
const InterruptedOutput = "[interrupted: bcode was stopped while this call ran; its effects, if any, are in the worktree. Check before repeating it.]"

// Replay rebuilds a conversation from events (agent.action,
// agent.observation, agent.finished; others are skipped) of the given
// attempts (none: all). Each call is matched with its observation; a call
// left without one gets InterruptedOutput. An observation for a call no
// action made, or a second observation of a call, is an error: the log has
// been tampered with or mixed up.
func Replay(events []engine.Event, attempts ...int64) (*Transcript, error) {
	t := &Transcript{}
	type slot struct {
		msgIndex int
		done     bool
	}
	calls := map[string]*slot{}
	var open []string // call ids awaiting an observation, in order
	closeOpen := func() {
		for _, id := range open {
			if !calls[id].done {
				t.Messages = append(t.Messages, wire.ChatMessage{Role: "tool", ToolCallID: id, Content: InterruptedOutput})
				t.Interrupted = append(t.Interrupted, id)
				calls[id].done = true
			}
		}
		open = nil
	}
	for _, e := range events {
		if len(attempts) > 0 && !slices.Contains(attempts, e.Attempt) {
			continue
		}
		switch e.Kind {
		case EventAction:
			var a actionData
			if err := json.Unmarshal(e.Data, &a); err != nil {
				return nil, fmt.Errorf("replay: event %d (%s): %w", e.Seq, e.Kind, err)
			}
			closeOpen()
			t.Turns++
			t.Tokens += a.PromptTokens + a.CompletionTokens
			t.Messages = append(t.Messages, wire.ChatMessage{Role: "assistant", Content: a.Content, ToolCalls: a.Calls})
			for _, c := range a.Calls {
				if _, dup := calls[c.ID]; dup {
					return nil, fmt.Errorf("replay: event %d: call id %q used twice", e.Seq, c.ID)
				}
				calls[c.ID] = &slot{msgIndex: len(t.Messages) - 1}
				open = append(open, c.ID)
			}
		case EventObservation:
			var o observationData
			if err := json.Unmarshal(e.Data, &o); err != nil {
				return nil, fmt.Errorf("replay: event %d (%s): %w", e.Seq, e.Kind, err)
			}
			sl, ok := calls[o.CallID]
			if !ok {
				return nil, fmt.Errorf("replay: event %d: observation of call %q, which no action made", e.Seq, o.CallID)
			}
			if sl.done {
				return nil, fmt.Errorf("replay: event %d: second observation of call %q", e.Seq, o.CallID)
			}
			if !slices.Contains(open, o.CallID) {
				return nil, fmt.Errorf("replay: event %d: observation of call %q after a later turn began", e.Seq, o.CallID)
			}
			sl.done = true
			t.Messages = append(t.Messages, wire.ChatMessage{Role: "tool", ToolCallID: o.CallID, Content: o.Output})
		case EventFinished:
			t.Finished = true
		}
	}
	closeOpen()
	return t, nil
}

// LoadTranscript reads the task's whole event log through r and replays the
// given attempts.
func LoadTranscript(ctx context.Context, r EventReader, taskID string, attempts ...int64) (*Transcript, error) {
	var all []engine.Event
	var after int64
	for {
		evs, err := r.Events(ctx, taskID, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("replay: reading events of task %s: %w", taskID, err)
		}
		all = append(all, evs...)
		if len(evs) < 1000 {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	return Replay(all, attempts...)
}
