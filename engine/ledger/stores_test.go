package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A ledger written before the code index and the image records moved into
// this package keeps working: the sets keep their names ("codegraph",
// "sandbox") and steps, so reopening applies nothing and reads the rows.
func TestCodeIndexAndImagesKeepTheirMigrationSets(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	old := openAt(t, path, WithMigrations("codegraph", codeIndexMigrations), WithMigrations("sandbox", imageMigrations))
	err := old.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO codegraph_units (repo, dir, hash, unit) VALUES ('/r', 'a', 'h1', '{"dir":"a"}')`); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO sandbox_images VALUES ('bcode:1', 'sha256:1', '3', '27.0', '1.47', '2026-01-02T03:04:05.123456789Z')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := migrationRows(t, old)
	old.Close()

	l := openAt(t, path, WithCodeIndex(), WithSandboxImages())
	rows, _ := migrationRows(t, l)
	if fmt.Sprint(rows) != fmt.Sprint(before) || !strings.Contains(fmt.Sprint(rows), "codegraph/1") || !strings.Contains(fmt.Sprint(rows), "sandbox/1") {
		t.Fatalf("migrations after reopening: %v, before: %v (want the same, codegraph/1 and sandbox/1 among them)", rows, before)
	}
	entries, err := l.CodeIndex(ctx, "/r")
	if err != nil || len(entries) != 1 || entries[0].Dir != "a" || entries[0].Hash != "h1" || string(entries[0].Unit) != `{"dir":"a"}` {
		t.Fatalf("CodeIndex = %+v, %v", entries, err)
	}
	if err := l.SaveCodeIndex(ctx, "/r", []CodeIndexEntry{{Dir: "b", Hash: "h2", Unit: []byte(`{}`)}, {Dir: "a", Hash: "h3", Unit: []byte(`{"x":1}`)}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveCodeIndex(ctx, "/r", nil, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	entries, err = l.CodeIndex(ctx, "/r")
	if err != nil || len(entries) != 1 || entries[0].Hash != "h3" || string(entries[0].Unit) != `{"x":1}` {
		t.Fatalf("after save and remove: %+v, %v", entries, err)
	}
	if other, err := l.CodeIndex(ctx, "/other"); err != nil || len(other) != 0 {
		t.Fatalf("another repository's index = %+v, %v", other, err)
	}

	img, ok, err := l.LastSandboxImage(ctx, "bcode:1")
	want := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if err != nil || !ok || img.ImageID != "sha256:1" || img.APIVersion != "1.47" || !img.BuiltAt.Equal(want) {
		t.Fatalf("LastSandboxImage = %+v ok=%v err=%v", img, ok, err)
	}
	newer := SandboxImage{Ref: "bcode:1", ImageID: "sha256:2", Rootfs: "3", Engine: "28.0", APIVersion: "1.48", BuiltAt: want.Add(time.Hour)}
	if err := l.RecordSandboxImage(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if img, ok, err = l.LastSandboxImage(ctx, "bcode:1"); err != nil || !ok || img != newer {
		t.Fatalf("after recording a newer image: %+v ok=%v err=%v, want %+v", img, ok, err, newer)
	}
	if _, ok, err = l.LastSandboxImage(ctx, "bcode:none"); err != nil || ok {
		t.Fatalf("an unrecorded tag: ok=%v err=%v", ok, err)
	}
}

func TestCodeIndexAndImagesNeedTheirOption(t *testing.T) {
	ctx := context.Background()
	l := openAt(t, filepath.Join(t.TempDir(), "ledger.db"))
	if _, err := l.CodeIndex(ctx, "/r"); err == nil || !strings.Contains(err.Error(), "WithCodeIndex") {
		t.Errorf("CodeIndex without the option: %v", err)
	}
	if err := l.RecordSandboxImage(ctx, SandboxImage{Ref: "x"}); err == nil || !strings.Contains(err.Error(), "WithSandboxImages") {
		t.Errorf("RecordSandboxImage without the option: %v", err)
	}
}
