package sandbox

// OpenConfinedPortable opens dir for confined reads through os.Root alone,
// as on a platform (or under a seccomp filter) without openat2, so the
// attack suite runs against both ways the reader opens.
func OpenConfinedPortable(dir string) (*Confined, error) {
	c, err := OpenConfined(dir)
	if c != nil {
		c.beneath.close()
		c.beneath = nil
	}
	return c, err
}
