package postgres

// NewestEventsQuery is the statement NewestEvents runs, for plan tests.
const NewestEventsQuery = newestEventsQuery
