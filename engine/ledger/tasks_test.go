package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bcode-dev/bcode/engine"
)

func newTask(t *testing.T, l *Ledger, repo, goal string) *engine.Task {
	t.Helper()
	task := &engine.Task{Repo: repo, Goal: goal, Base: "abc123"}
	if err := l.CreateTask(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestTaskCRUD(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	l := openTemp(t, WithClock(clock.now))

	want := &engine.Task{
		Repo: "/src/app",
		Goal: "make Clamp respect the upper bound",
		Selection: &engine.Selection{File: "clamp.go", StartLine: 3, EndLine: 9,
			Text: "func Clamp(...)", SHA256: "e3b0c442"},
		Criteria: []string{"TestClampAbove passes", "no API change"},
		Base:     "0123abcd",
		Budgets:  engine.Budgets{MaxAttempts: 3, MaxTurns: 20, MaxTokens: 100000, WallClock: 15 * time.Minute},
	}
	if err := l.CreateTask(ctx, want); err != nil {
		t.Fatal(err)
	}
	if len(want.ID) != 10 || want.Branch != "bcode/"+want.ID || want.Status != engine.TaskQueued ||
		!want.CreatedAt.Equal(clock.now()) || !want.UpdatedAt.Equal(want.CreatedAt) {
		t.Fatalf("defaults not filled in: %+v", want)
	}
	got, err := l.Task(ctx, want.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Task round trip:\n got %+v\nwant %+v", got, want)
	}

	evs, err := l.Events(ctx, want.ID, 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Kind != "task.created" {
		t.Fatalf("CreateTask events: %+v, %v", evs, err)
	}
	var data map[string]string
	if err := json.Unmarshal(evs[0].Data, &data); err != nil || data["goal"] != want.Goal {
		t.Errorf("task.created data %s: %v", evs[0].Data, err)
	}

	if _, err := l.Task(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Task(nope): %v, want ErrNotFound", err)
	}
	dup := &engine.Task{ID: want.ID, Repo: "/src/app", Goal: "again"}
	if err := l.CreateTask(ctx, dup); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate id: %v", err)
	}
	for name, bad := range map[string]*engine.Task{
		"no goal":    {Repo: "/r"},
		"no repo":    {Goal: "g"},
		"bad status": {Repo: "/r", Goal: "g", Status: "sleeping"},
	} {
		if err := l.CreateTask(ctx, bad); err == nil {
			t.Errorf("CreateTask with %s succeeded", name)
		}
	}

	// Tasks: newest first, filtered by repo.
	clock.advance(time.Second)
	second := newTask(t, l, "/src/app", "second")
	clock.advance(time.Second)
	other := newTask(t, l, "/src/other", "elsewhere")
	ids := func(ts []engine.Task) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	all, err := l.Tasks(ctx, "")
	if err != nil || !reflect.DeepEqual(ids(all), []string{other.ID, second.ID, want.ID}) {
		t.Errorf("Tasks(all) = %v, %v", ids(all), err)
	}
	app, err := l.Tasks(ctx, "/src/app")
	if err != nil || !reflect.DeepEqual(ids(app), []string{second.ID, want.ID}) {
		t.Errorf("Tasks(/src/app) = %v, %v", ids(app), err)
	}

	// UpdateTask under a lease.
	lease, _, err := l.Acquire(ctx, want.ID, LocalHolder("runner-a"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.advance(time.Minute / 2)
	upd := *got
	upd.Status, upd.Verdict, upd.Reason = engine.TaskBlocked, "green", "budget: attempts spent"
	upd.Criteria = nil
	upd.Repo = "/ignored"
	if err := l.UpdateTask(ctx, lease, &upd); err != nil {
		t.Fatal(err)
	}
	after, _ := l.Task(ctx, want.ID)
	if after.Status != engine.TaskBlocked || after.Verdict != "green" || after.Reason != "budget: attempts spent" ||
		after.Criteria != nil || after.Repo != "/src/app" || !after.CreatedAt.Equal(want.CreatedAt) ||
		!after.UpdatedAt.Equal(clock.now()) || !upd.UpdatedAt.Equal(clock.now()) {
		t.Errorf("after UpdateTask: %+v", after)
	}
	wrong := *after
	wrong.ID = second.ID
	if err := l.UpdateTask(ctx, lease, &wrong); err == nil {
		t.Error("UpdateTask of another task under this lease succeeded")
	}
}

func TestAttempts(t *testing.T) {
	ctx := context.Background()
	l := openTemp(t)
	task := newTask(t, l, "/r", "g")
	lease, _, err := l.Acquire(ctx, task.ID, LocalHolder("a"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a1, err := l.StartAttempt(ctx, lease, task.ID)
	if err != nil || a1.Number != 1 || a1.Fence != lease.Fence || a1.Status != engine.AttemptRunning {
		t.Fatalf("first attempt %+v, %v", a1, err)
	}
	a1.Verdict, a1.Note = "failed", "the test still fails on head"
	if err := l.FinishAttempt(ctx, lease, a1); err != nil {
		t.Fatal(err)
	}
	if err := l.FinishAttempt(ctx, lease, a1); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Errorf("finishing twice: %v", err)
	}
	a2, err := l.StartAttempt(ctx, lease, task.ID)
	if err != nil || a2.Number != 2 {
		t.Fatalf("second attempt %+v, %v", a2, err)
	}
	missing := &engine.Attempt{ID: 9999, TaskID: task.ID}
	if err := l.FinishAttempt(ctx, lease, missing); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("finishing a missing attempt: %v", err)
	}

	got, err := l.Attempts(ctx, task.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("Attempts: %+v, %v", got, err)
	}
	if got[0].Status != engine.AttemptFinished || got[0].Verdict != "failed" || got[0].Note != a1.Note ||
		got[0].FinishedAt == nil || got[1].Status != engine.AttemptRunning || got[1].FinishedAt != nil {
		t.Errorf("Attempts: %+v", got)
	}
}

func TestVerificationRuns(t *testing.T) {
	ctx := context.Background()
	l := openTemp(t)
	report := json.RawMessage(`{"verdict":"verified","tests":[{"name":"TestX","credited":true}]}`)
	for i, verdict := range []string{"green", "verified", "tampered"} {
		repo := "/src/a"
		if i == 1 {
			repo = "/src/b"
		}
		v := &engine.VerificationRun{Repo: repo, Base: "b", Head: "h", Verdict: verdict, Report: report, DurationMS: int64(100 * i)}
		id, err := l.RecordVerification(ctx, v)
		if err != nil || id != v.ID || id == 0 || v.At.IsZero() {
			t.Fatalf("RecordVerification: id %d, %+v, %v", id, v, err)
		}
	}
	all, err := l.Verifications(ctx, "", 0)
	if err != nil || len(all) != 3 || all[0].Verdict != "tampered" || all[2].Verdict != "green" {
		t.Fatalf("Verifications(all): %+v, %v", all, err)
	}
	if string(all[1].Report) != string(report) || all[1].Repo != "/src/b" || all[2].DurationMS != 0 || all[0].DurationMS != 200 {
		t.Errorf("stored run: %+v", all[1])
	}
	a, err := l.Verifications(ctx, "/src/a", 1)
	if err != nil || len(a) != 1 || a[0].Verdict != "tampered" {
		t.Errorf("Verifications(/src/a, 1): %+v, %v", a, err)
	}
	if _, err := l.RecordVerification(ctx, &engine.VerificationRun{Repo: "/r", Verdict: "green", Report: json.RawMessage(`{bad`)}); err == nil {
		t.Error("a report that is not JSON was stored")
	}
	if _, err := l.RecordVerification(ctx, &engine.VerificationRun{Repo: "/r"}); err == nil {
		t.Error("a run without a verdict was stored")
	}
}

func TestModelCalls(t *testing.T) {
	ctx := context.Background()
	l := openTemp(t)
	task := newTask(t, l, "/r", "g")
	lease, _, err := l.Acquire(ctx, task.ID, LocalHolder("a"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := &engine.ModelCall{Endpoint: "http://127.0.0.1:8080/v1", Model: "qwen", PromptTokens: 1200,
		CompletionTokens: 300, DurationMS: 4100, Timings: json.RawMessage(`{"predicted_per_second":41.2}`)}
	id, err := l.RecordModelCall(ctx, lease, c)
	if err != nil || id == 0 || c.TaskID != task.ID {
		t.Fatalf("RecordModelCall: %d %+v %v", id, c, err)
	}
	got, err := l.ModelCalls(ctx, task.ID)
	if err != nil || len(got) != 1 {
		t.Fatalf("ModelCalls: %+v %v", got, err)
	}
	c.At = c.At.UTC()
	if !reflect.DeepEqual(got[0], *c) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got[0], *c)
	}
	if _, err := l.RecordModelCall(ctx, lease, &engine.ModelCall{Model: "m", Timings: json.RawMessage(`nope`)}); err == nil {
		t.Error("timings that are not JSON were stored")
	}
}
