package postgres

// NewestEventsQuery is the statement NewestEvents runs, for plan tests.
const NewestEventsQuery = newestEventsQuery

// SchemaVersion is the schema's latest version: its number of steps.
var SchemaVersion = len(migrations)
