package docker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeGoCacheProtocol drives ServeGoCache as the go command does:
// handshake, a miss, a put, a hit from upper, a hit from the seed, close.
func TestServeGoCacheProtocol(t *testing.T) {
	lower, upper := t.TempDir(), filepath.Join(t.TempDir(), "upper")
	seedAction := bytes.Repeat([]byte{0xab}, 32)
	seedOut := bytes.Repeat([]byte{0xcd}, 32)
	seedBody := []byte("compiled in the seed")
	if err := os.MkdirAll(filepath.Join(lower, "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(lower, "cd"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cacheFile(lower, seedOut, "d"), seedBody, 0o644)
	os.WriteFile(cacheFile(lower, seedAction, "a"), []byte(fmt.Sprintf("v1 %x %x %20d %20d\n", seedAction, seedOut, len(seedBody), 1700000000000000000)), 0o644)

	action := bytes.Repeat([]byte{0x01}, 32)
	out := bytes.Repeat([]byte{0x02}, 32)
	body := []byte("new object")
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.Encode(cacheRequest{ID: 1, Command: "get", ActionID: action})
	enc.Encode(cacheRequest{ID: 2, Command: "put", ActionID: action, OutputID: out, BodySize: int64(len(body))})
	enc.Encode(base64.StdEncoding.EncodeToString(body))
	enc.Encode(cacheRequest{ID: 3, Command: "get", ActionID: action})
	enc.Encode(cacheRequest{ID: 4, Command: "get", ActionID: seedAction})
	enc.Encode(cacheRequest{ID: 5, Command: "bogus"})
	enc.Encode(cacheRequest{ID: 6, Command: "close"})
	var resp bytes.Buffer
	if err := ServeGoCache(lower, upper, &in, &resp); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&resp)
	var rs []cacheResponse
	for dec.More() {
		var r cacheResponse
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if len(rs) != 7 || strings.Join(rs[0].KnownCommands, ",") != "get,put,close" {
		t.Fatalf("responses %+v", rs)
	}
	if !rs[1].Miss {
		t.Errorf("first get: %+v, want a miss", rs[1])
	}
	if rs[2].Err != "" || !strings.HasPrefix(rs[2].DiskPath, upper) {
		t.Errorf("put: %+v", rs[2])
	}
	if b, _ := os.ReadFile(rs[2].DiskPath); string(b) != string(body) {
		t.Errorf("put stored %q", b)
	}
	if rs[3].Miss || !bytes.Equal(rs[3].OutputID, out) || rs[3].Size != int64(len(body)) || rs[3].DiskPath != rs[2].DiskPath {
		t.Errorf("get after put: %+v", rs[3])
	}
	if rs[4].Miss || !bytes.Equal(rs[4].OutputID, seedOut) || !strings.HasPrefix(rs[4].DiskPath, lower) {
		t.Errorf("get from the seed: %+v", rs[4])
	}
	if rs[5].Err == "" {
		t.Errorf("unknown command answered %+v", rs[5])
	}
	if rs[6].ID != 6 {
		t.Errorf("close: %+v", rs[6])
	}
	// Nothing was written to the seed.
	if ents, _ := os.ReadDir(lower); len(ents) != 2 {
		t.Errorf("the seed has %d entries", len(ents))
	}
}
