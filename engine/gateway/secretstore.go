package gateway

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// SecretStore keeps what a task's sessions must never send, across its
// attempts: every attempt's canary and every secret a scan found. Each
// attempt's Redactor starts with all of them, so a canary or a key that
// attempt 1 saw (and perhaps stored in the worktree, disguised) is still
// found when attempt 2 prints it.
type SecretStore interface {
	// Secrets returns the task's values, in the order they were added.
	Secrets(taskID string) ([]string, error)
	// AddSecrets records more values of the task.
	AddSecrets(taskID string, values ...string) error
}

// SecretDir is a SecretStore in a host directory: one file per task, mode
// 0600 in a 0700 directory, one JSON string per line, appended to. It
// lives in bcode's state directory, which no sandbox mounts.
type SecretDir struct {
	Dir string
}

// secretFileMu serialises appends within the process (a task has one
// runner at a time: its lease).
var secretFileMu sync.Mutex

func (d SecretDir) path(taskID string) (string, error) {
	if d.Dir == "" {
		return "", errors.New("gateway: secret store without a directory")
	}
	name := taskID
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		name = "x" + hex.EncodeToString([]byte(taskID))
	}
	return filepath.Join(d.Dir, name+".secrets"), nil
}

// Secrets implements SecretStore. A task with no file has none.
func (d SecretDir) Secrets(taskID string) ([]string, error) {
	p, err := d.path(taskID)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: reading the task's secrets: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var v string
		if json.Unmarshal(sc.Bytes(), &v) == nil && v != "" {
			out = append(out, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("gateway: reading the task's secrets %s: %w", p, err)
	}
	return out, nil
}

// AddSecrets implements SecretStore.
func (d SecretDir) AddSecrets(taskID string, values ...string) error {
	if len(values) == 0 {
		return nil
	}
	p, err := d.path(taskID)
	if err != nil {
		return err
	}
	secretFileMu.Lock()
	defer secretFileMu.Unlock()
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("gateway: the secret store: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("gateway: the secret store: %w", err)
	}
	var b strings.Builder
	for _, v := range values {
		line, _ := json.Marshal(v)
		b.Write(line)
		b.WriteByte('\n')
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("gateway: the secret store: %w", err)
	}
	return nil
}
