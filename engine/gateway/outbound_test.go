package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/bcode-dev/bcode/engine/gateway/modeltest"
	"github.com/bcode-dev/bcode/engine/gateway/redacttest"
)

// TestOutboundAttackSuite runs the boundary's attack suite against the
// choke point as the product uses it: a request posted through a guarded
// client (outboundTransport under it, the session's Redactor in the
// request's context) to the scripted model server, which records every
// byte it receives.
func TestOutboundAttackSuite(t *testing.T) {
	srv := modeltest.New(modeltest.Options{Tools: true})
	defer srv.Close()
	res := redacttest.Run(t, redacttest.Boundary{New: func(t *testing.T, known []string) func([]byte) ([]byte, error) {
		red, err := NewRedactor(known, nil)
		if err != nil {
			t.Fatal(err)
		}
		client := guardClient(nil, 0)
		return func(body []byte) ([]byte, error) {
			before := len(srv.Requests())
			ctx, _ := withGuard(context.Background(), red)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			rs := srv.Requests()
			if len(rs) == before {
				return nil, err
			}
			return rs[len(rs)-1].Body, err
		}
	}})
	if res.Held != res.Attacks || res.Attacks < 500 {
		t.Errorf("%d of %d attacks held", res.Held, res.Attacks)
	}
}

// TestUnguardedRequestRefused: a request with a body and no session's
// redactor never leaves.
func TestUnguardedRequestRefused(t *testing.T) {
	srv := modeltest.New(modeltest.Options{Tools: true})
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader([]byte(`{"messages":[]}`)))
	_, err := guardClient(nil, 0).Do(req)
	if !errors.Is(err, ErrUnguarded) || len(srv.Requests()) != 0 {
		t.Errorf("unguarded request: %v, %d received", err, len(srv.Requests()))
	}
}
