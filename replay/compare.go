package replay

import "github.com/retrace-dev/retrace/compare"

// The comparison itself lives in package compare, shared with mock serve
// --from and the before/after diff; these names keep replay's callers,
// which read a Result's Report, working unchanged.
type (
	// Report is a replay's comparison (compare.Result) with Run's notes.
	Report = compare.Result
	// Divergence is one place where the replay differs (compare.Divergence).
	Divergence = compare.Divergence
	// Class names a divergence's kind (compare.Class).
	Class = compare.Class
	// Options tunes the comparison (compare.Options).
	Options = compare.Options
)

// Classes lists every Class in report order (compare.Classes).
var Classes = compare.Classes
