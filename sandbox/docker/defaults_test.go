package docker

import (
	"testing"

	"github.com/bcode-dev/bcode/config"
)

// The sandbox's defaults are written twice, here and in config (neither
// package may import the other): a [sandbox] table left out and a Config
// left zero must mean the same container.
func TestDefaultsAgreeWithConfig(t *testing.T) {
	s := config.Default().Sandbox
	if DefaultImage != s.Image {
		t.Errorf("DefaultImage %q, config's %q", DefaultImage, s.Image)
	}
	if DefaultMemoryBytes != int64(s.MemoryMB)<<20 {
		t.Errorf("DefaultMemoryBytes %d, config's %d MB", DefaultMemoryBytes, s.MemoryMB)
	}
	if DefaultNanoCPUs != int64(s.CPUs)*1e9 {
		t.Errorf("DefaultNanoCPUs %v, config's %d CPUs", DefaultNanoCPUs, s.CPUs)
	}
	if DefaultDiskBytes != int64(s.DiskMB)<<20 {
		t.Errorf("DefaultDiskBytes %d, config's %d MB", DefaultDiskBytes, s.DiskMB)
	}
	if DefaultPidsLimit != int64(s.Pids) {
		t.Errorf("DefaultPidsLimit %d, config's %d", DefaultPidsLimit, s.Pids)
	}
}
