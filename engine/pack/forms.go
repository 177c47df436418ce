package pack

// Markdown is Render(p): the pack as its agent reads it and the editor's
// preview shows it. A surface that holds a pack from engine/app renders it
// with this, without importing the package.
func (p *Pack) Markdown() string { return Render(p) }

// JSON is JSON(p): the pack as indented JSON (bcode pack --json).
func (p *Pack) JSON() ([]byte, error) { return JSON(p) }
