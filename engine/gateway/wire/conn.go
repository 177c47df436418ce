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
// response; a notification (no id) gets no response either way.
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, *Error)

// Serve reads requests until EOF or ctx ends, answering each through h. A
// malformed line is answered with a parse or invalid-request error and the
// loop goes on; a peer that sends only garbage is stopped after maxBad bad
// lines in a row. It returns nil at EOF.
func (c *Conn) Serve(ctx context.Context, h Handler) error {
	const maxBad = 16
	bad := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := c.ReadLine()
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, ErrLineTooLong) {
			bad++
			if werr := c.Reply(nil, nil, Errorf(CodeInvalidRequest, "%v", err)); werr != nil {
				return werr
			}
			if bad >= maxBad {
				return fmt.Errorf("wire: %d malformed lines in a row, closing", bad)
			}
			continue
		}
		if err != nil {
			return err
		}
		m, derr := Decode(line)
		if derr != nil {
			bad++
			var id *ID
			if m != nil && m.IsRequest() {
				id = m.ID
			}
			if werr := c.Reply(id, nil, derr); werr != nil {
				return werr
			}
			if bad >= maxBad {
				return fmt.Errorf("wire: %d malformed lines in a row, closing", bad)
			}
			continue
		}
		bad = 0
		if !m.IsRequest() {
			// Nobody on this side makes calls, so a response is unsolicited.
			if werr := c.Reply(nil, nil, Errorf(CodeInvalidRequest, "unexpected response (id %v): this side makes no calls", m.ID)); werr != nil {
				return werr
			}
			continue
		}
		res, rerr := h(ctx, m.Method, m.Params)
		if m.ID == nil {
			continue // a notification
		}
		if werr := c.Reply(m.ID, res, rerr); werr != nil {
			return werr
		}
	}
}
