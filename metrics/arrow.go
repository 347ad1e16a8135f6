//go:build duckdb_arrow

package metrics

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/duckdb/duckdb-go/v2"
)

// ArrowAvailable says whether this build can write Arrow (build tag
// duckdb_arrow).
const ArrowAvailable = true

// WriteArrow runs query and writes its result to w as an Arrow IPC stream,
// batch by batch through DuckDB's Arrow interface, so the result is never
// held in memory whole. It returns the number of rows written.
func (db *DB) WriteArrow(ctx context.Context, w io.Writer, query string) (int64, error) {
	if !readOnly(query) {
		db.dropPrepared() // as Query does: it may write (see Metric)
		defer db.dropPrepared()
	}
	db.dmu.Lock() // as Query does: see DB.dmu
	defer db.dmu.Unlock()
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("arrow export: %w", err)
	}
	defer conn.Close()
	db.materialize(ctx, conn, query)
	var rows int64
	err = conn.Raw(func(c any) error {
		a, err := duckdb.NewArrowFromConn(c.(driver.Conn))
		if err != nil {
			return err
		}
		rr, err := a.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rr.Release()
		iw := ipc.NewWriter(w, ipc.WithSchema(rr.Schema()))
		for rr.Next() {
			rec := rr.RecordBatch()
			if err := iw.Write(rec); err != nil {
				iw.Close()
				return err
			}
			rows += rec.NumRows()
		}
		if err := rr.Err(); err != nil {
			iw.Close()
			return err
		}
		return iw.Close()
	})
	if err != nil {
		return rows, fmt.Errorf("arrow export: %w", err)
	}
	if !readOnly(query) {
		// On conn: the database's one connection is held until return.
		if err := db.changed(ctx, conn); err != nil {
			return rows, fmt.Errorf("arrow export: the statement ran, but %w", err)
		}
	}
	return rows, nil
}
