// Package suite runs the bench's suites over catalog tasks and writes
// their reports (engine/bench): "verify" through the gate alone, "tasks"
// as users run tasks, graded by hidden checks on a clean snapshot.
package suite
