package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"
)

// Every numeric flag has a range, checked while the flags are parsed, so an
// amount no one means (a budget of 2^63 attempts that wraps negative in the
// ledger, a negative wait, port 0) stops at the command line with the range
// in the message, instead of being stored or acted on.

// intRange is an int flag that refuses values outside [min, max].
type intRange struct {
	p        *int
	min, max int
}

func (r intRange) String() string {
	if r.p == nil {
		return "0"
	}
	return strconv.Itoa(*r.p)
}

func (r intRange) Set(s string) error {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("out of range: give a whole number from %d to %d", r.min, r.max)
		}
		return fmt.Errorf("not a whole number: give a whole number from %d to %d", r.min, r.max)
	}
	if v < int64(r.min) || v > int64(r.max) {
		return fmt.Errorf("out of range: give a whole number from %d to %d", r.min, r.max)
	}
	*r.p = int(v)
	return nil
}

// flagDefiner is a *flag.FlagSet, or a command's cliFlags.
type flagDefiner interface {
	Var(value flag.Value, name, usage string)
}

// intFlag defines an int flag with a default and a range.
func intFlag(fs flagDefiner, p *int, name string, value, min, max int, usage string) {
	*p = value
	fs.Var(intRange{p, min, max}, name, fmt.Sprintf("%s (`N` from %d to %d)", usage, min, max))
}

// durationRange is a duration flag that refuses values outside [min, max].
type durationRange struct {
	p        *time.Duration
	min, max time.Duration
}

func (r durationRange) String() string {
	if r.p == nil {
		return "0s"
	}
	return r.p.String()
}

func (r durationRange) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (like 90s or 5m), or beyond 2562047h: give a duration from %s to %s", r.min, r.max)
	}
	if v < r.min || v > r.max {
		return fmt.Errorf("out of range: give a duration from %s to %s", r.min, r.max)
	}
	*r.p = v
	return nil
}

// durationFlag defines a duration flag with a default and a range.
func durationFlag(fs flagDefiner, p *time.Duration, name string, value, min, max time.Duration, usage string) {
	*p = value
	fs.Var(durationRange{p, min, max}, name, fmt.Sprintf("%s (`DUR` from %s to %s)", usage, min, max))
}

// The ranges. Budgets are raised by a resume, so each bound is far above
// anything a user means and far below where a sum of two could overflow.
const (
	maxMoreAttempts = 1000
	maxMoreTurns    = 100_000
	maxMoreTokens   = 1_000_000_000
	maxMoreWall     = 365 * 24 * time.Hour
	maxWorkers      = 1024
	maxPackBudget   = 10_000_000
	maxModelContext = 1 << 24
	maxModelLayers  = 10_000
	maxTimeout      = 7 * 24 * time.Hour
)
