package python

// Every read of the snapshot, of what the engine's processes wrote in the
// scratch directory, and of bcode's cache goes through mutate.ReadBeneath
// and mutate.WalkBeneath, the confined reader.

// Caps on what one read may hold.
const (
	maxSourceFile = 4 << 20   // a changed Python source
	maxTestSource = 1 << 20   // a test file a report embeds
	maxCacheEntry = 64 << 20  // a kept baseline
	maxResults    = 256 << 20 // the Python engine's records
)
