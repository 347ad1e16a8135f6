//go:build !duckdb_arrow

package metrics

import (
	"context"
	"fmt"
	"io"
)

// ArrowAvailable says whether this build can write Arrow (build tag
// duckdb_arrow).
const ArrowAvailable = false

// WriteArrow fails with ErrNoArrow: this build has no Arrow support.
func (db *DB) WriteArrow(ctx context.Context, w io.Writer, query string) (int64, error) {
	return 0, fmt.Errorf("arrow export: %w", ErrNoArrow)
}
