package docker

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bcode-dev/bcode/sandbox"
)

// ServeGoCache is a GOCACHEPROG (Go 1.24+) for the sandbox: the go command
// inside the container starts it and asks it for build outputs by action
// ID. Gets look in upper, then in lower; puts go to upper only.
//
// lower is a seeded build cache in the go command's own on-disk format,
// mounted read-only; upper is the container's private tmpfs. So a build in
// the sandbox reuses what the host already compiled (the standard library
// above all, which a cold cache rebuilds on every command), while nothing
// the sandboxed code writes can reach the host's cache or a later command.
//
// in and out carry the protocol's JSON lines; ServeGoCache returns after
// "close" or at the end of in.
func ServeGoCache(lower, upper string, in io.Reader, out io.Writer) error {
	if err := os.MkdirAll(upper, 0o700); err != nil {
		return fmt.Errorf("gocache: %w", err)
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(cacheResponse{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	br := bufio.NewReaderSize(in, 64<<10)
	dec := json.NewDecoder(br)
	for {
		var req cacheRequest
		if err := dec.Decode(&req); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("gocache: reading a request: %w", err)
		}
		resp := cacheResponse{ID: req.ID}
		switch req.Command {
		case "get":
			resp = getEntry(lower, upper, req)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				var enc string
				if err := dec.Decode(&enc); err != nil {
					return fmt.Errorf("gocache: reading the body of request %d: %w", req.ID, err)
				}
				b, err := base64.StdEncoding.DecodeString(enc)
				if err != nil {
					return fmt.Errorf("gocache: the body of request %d: %w", req.ID, err)
				}
				body = b
			}
			resp = putEntry(upper, req, body)
		case "close":
			return enc.Encode(resp)
		default:
			resp.Err = "unknown command " + strconv.Quote(req.Command)
		}
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
}

type cacheRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type cacheResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// cacheFile is where the go command's disk cache keeps id's entry of kind
// "a" (action) or "d" (output data).
func cacheFile(dir string, id []byte, kind string) string {
	h := hex.EncodeToString(id)
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

// getEntry answers a get from upper, else lower.
func getEntry(lower, upper string, req cacheRequest) cacheResponse {
	resp := cacheResponse{ID: req.ID, Miss: true}
	if len(req.ActionID) == 0 {
		resp.Err = "get without an action ID"
		return resp
	}
	for _, dir := range []string{upper, lower} {
		if dir == "" {
			continue
		}
		out, size, t, err := readActionEntry(cacheFile(dir, req.ActionID, "a"), req.ActionID)
		if err != nil {
			continue
		}
		data := cacheFile(dir, out, "d")
		if fi, err := os.Stat(data); err != nil || fi.Size() != size {
			continue
		}
		return cacheResponse{ID: req.ID, OutputID: out, Size: size, Time: &t, DiskPath: data}
	}
	return resp
}

// readActionEntry parses "v1 <action hex> <output hex> <size> <unixnano>\n".
func readActionEntry(path string, action []byte) (out []byte, size int64, t time.Time, err error) {
	b, err := sandbox.ReadPath(path, 4<<10)
	if err != nil {
		return nil, 0, t, err
	}
	f := strings.Fields(string(b))
	if len(f) != 5 || f[0] != "v1" || f[1] != hex.EncodeToString(action) {
		return nil, 0, t, errors.New("malformed action entry")
	}
	out, err = hex.DecodeString(f[2])
	if err != nil {
		return nil, 0, t, err
	}
	size, err = strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return nil, 0, t, err
	}
	nano, err := strconv.ParseInt(f[4], 10, 64)
	if err != nil {
		return nil, 0, t, err
	}
	return out, size, time.Unix(0, nano), nil
}

// putEntry stores body and its action entry in upper, in the go command's
// own format, writing each file whole before renaming it into place.
func putEntry(upper string, req cacheRequest, body []byte) cacheResponse {
	resp := cacheResponse{ID: req.ID}
	if len(req.ActionID) == 0 || len(req.OutputID) == 0 || int64(len(body)) != req.BodySize {
		resp.Err = "put needs an action ID, an output ID and a body of BodySize bytes"
		return resp
	}
	data := cacheFile(upper, req.OutputID, "d")
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", req.ActionID, req.OutputID, len(body), time.Now().UnixNano())
	for _, w := range []struct {
		path string
		b    []byte
	}{{data, body}, {cacheFile(upper, req.ActionID, "a"), []byte(entry)}} {
		if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
			resp.Err = err.Error()
			return resp
		}
		tmp := w.path + ".tmp" + strconv.FormatInt(req.ID, 10)
		if err := os.WriteFile(tmp, w.b, 0o600); err != nil {
			resp.Err = err.Error()
			return resp
		}
		if err := os.Rename(tmp, w.path); err != nil {
			resp.Err = err.Error()
			return resp
		}
	}
	resp.DiskPath = data
	return resp
}
