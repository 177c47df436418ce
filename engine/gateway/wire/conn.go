package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Conn is one end of a newline-delimited JSON-RPC stream. Writes are
// serialised; reads happen on the goroutine that calls Call (client side)
// or Serve (server side), never both on one Conn.
type Conn struct {
	r *bufio.Reader
	w io.Writer

	wmu    sync.Mutex
	nextID int64
}

// NewConn reads messages from r and writes them to w.
func NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{r: bufio.NewReaderSize(r, 64<<10), w: w}
}

// ErrLineTooLong: the peer sent a line longer than MaxLine.
var ErrLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLine)

// ReadLine returns the next line without its newline. A line over MaxLine
// is consumed to its end and reported as ErrLineTooLong, so the stream
// stays in step.
func (c *Conn) ReadLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		frag, err := c.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > MaxLine+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 && !tooLong {
				return line, nil // a last line without its newline
			}
			return nil, err
		}
		break
	}
	if tooLong {
		return nil, ErrLineTooLong
	}
	return line[:len(line)-1], nil
}

// Write sends one message.
func (c *Conn) Write(m *Message) error {
	b, err := Encode(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(b)
	return err
}

// Reply sends a response to id: result when rerr is nil, else the error.
func (c *Conn) Reply(id *ID, result any, rerr *Error) error {
	m := &Message{ID: id}
	if rerr != nil {
		if id == nil {
			// A response to an unreadable request has a null id; encode it
			// explicitly since omitempty would drop it.
			return c.writeNullID(rerr)
		}
		m.Error = rerr
		return c.Write(m)
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return c.Write(&Message{ID: id, Error: Errorf(CodeInternal, "encoding the result: %v", err)})
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	m.Result = raw
	return c.Write(m)
}

func (c *Conn) writeNullID(e *Error) error {
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      *ID    `json:"id"`
		Error   *Error `json:"error"`
	}{"2.0", nil, e})
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// Call sends a request and waits for its response, decoding the result into
// result (may be nil). A JSON-RPC error comes back as *Error. Only one Call
// may be in flight: the agent's loop is sequential by design, so a response
// with another id is a protocol error, not something to queue.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: encoding params: %w", method, err)
	}
	c.nextID++
	id := c.nextID
	if err := c.Write(&Message{ID: NumberID(id), Method: method, Params: raw}); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	type read struct {
		line []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		l, err := c.ReadLine()
		done <- read{l, err}
	}()
	var rd read
	select {
	case <-ctx.Done():
		return ctx.Err()
	case rd = <-done:
	}
	if rd.err != nil {
		if errors.Is(rd.err, io.EOF) {
			return fmt.Errorf("%s: the peer closed the connection", method)
		}
		return fmt.Errorf("%s: %w", method, rd.err)
	}
	m, derr := Decode(rd.line)
	if derr != nil {
		return fmt.Errorf("%s: bad response: %w", method, derr)
	}
	if m.IsRequest() {
		return fmt.Errorf("%s: the peer sent a request (%s) where a response was due", method, m.Method)
	}
	if m.ID == nil || m.ID.IsStr || m.ID.Num != id {
		if m.Error != nil {
			return m.Error
		}
		return fmt.Errorf("%s: response to id %v, want %d", method, m.ID, id)
	}
	if m.Error != nil {
		return m.Error
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s: decoding result: %w", method, err)
		}
	}
	return nil
}

// Handler answers one request. Returning a non-nil *Error sends it as the
// response; an *Error with CodeViolation also ends Serve.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, *Error)

// ErrViolation: the peer broke the protocol; Serve ended.
var ErrViolation = errors.New("wire: protocol violation")

// ViolationError says how the peer broke the protocol.
type ViolationError struct {
	// Kind is a short code: "malformed", "unsolicited_response",
	// "notification", "duplicate_id", or the handler's own.
	Kind   string
	Detail string
}

func (e *ViolationError) Error() string {
	return fmt.Sprintf("wire: protocol violation (%s): %s", e.Kind, e.Detail)
}

// Is makes errors.Is(err, ErrViolation) hold.
func (e *ViolationError) Is(target error) bool { return target == ErrViolation }

// Serve reads requests until EOF or ctx ends, answering each through h,
// and returns nil at EOF. It accepts only what a well-behaved client
// sends: one request at a time, each with an id greater than the last.
// Anything else (a malformed or over-long line, a response, since this
// side asks nothing; a notification; an id seen before) is answered with
// an error and ends Serve with a *ViolationError: the only writer of the
// stream is the client, so a message it would never send means someone
// else is writing, and nothing more from the stream is trusted.
func (c *Conn) Serve(ctx context.Context, h Handler) error {
	var last int64
	seen := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := c.ReadLine()
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, ErrLineTooLong) {
			return c.violate(nil, "malformed", err.Error())
		}
		if err != nil {
			return err
		}
		m, derr := Decode(line)
		if derr != nil {
			var id *ID
			if m != nil && m.IsRequest() {
				id = m.ID
			}
			return c.violate(id, "malformed", derr.Message)
		}
		if !m.IsRequest() {
			return c.violate(nil, "unsolicited_response", fmt.Sprintf("a response (id %v) where nothing was asked: this side makes no calls", m.ID))
		}
		if m.ID == nil {
			return c.violate(nil, "notification", fmt.Sprintf("a notification (%s): every message must be a request", truncate(m.Method, 40)))
		}
		if m.ID.IsStr || (seen && m.ID.Num <= last) {
			return c.violate(m.ID, "duplicate_id", fmt.Sprintf("request id %v after %d: ids must increase", m.ID, last))
		}
		seen, last = true, m.ID.Num
		res, rerr := h(ctx, m.Method, m.Params)
		if werr := c.Reply(m.ID, res, rerr); werr != nil {
			return werr
		}
		if rerr != nil && rerr.Code == CodeViolation {
			return &ViolationError{Kind: "handler", Detail: rerr.Message}
		}
	}
}

// violate answers a violation and returns it.
func (c *Conn) violate(id *ID, kind, detail string) error {
	_ = c.Reply(id, nil, Errorf(CodeViolation, "protocol violation (%s): %s; the session ends", kind, detail))
	return &ViolationError{Kind: kind, Detail: detail}
}
