package sandbox

import (
	"bytes"
	"io"
	"sync"
)

// CappedOutput keeps the first Limit bytes written to it and notes that the
// rest was cut, while passing everything on to Tee. Every Runner backend
// captures stdout and stderr through it, so OutputLimit means the same
// everywhere.
type CappedOutput struct {
	Limit int64
	Tee   io.Writer // may be nil

	mu  sync.Mutex
	buf bytes.Buffer
	cut bool
}

// NewCappedOutput returns a writer for one stream of cmd: limit bytes kept
// (DefaultOutputLimit when cmd.OutputLimit is zero), tee receiving all.
func NewCappedOutput(limit int64, tee io.Writer) *CappedOutput {
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	return &CappedOutput{Limit: limit, Tee: tee}
}

// Write never fails: a command must not die because its output is cut.
func (c *CappedOutput) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Tee != nil {
		_, _ = c.Tee.Write(p)
	}
	room := c.Limit - int64(c.buf.Len())
	switch {
	case room <= 0:
		c.cut = c.cut || len(p) > 0
	case int64(len(p)) > room:
		c.buf.Write(p[:room])
		c.cut = true
	default:
		c.buf.Write(p)
	}
	return len(p), nil
}

// Bytes is a copy of what was kept: a stream may still be writing (a
// container's attach copier can outlive the process).
func (c *CappedOutput) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// Cut reports whether anything was dropped.
func (c *CappedOutput) Cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}
