//go:build !duckdb_arrow

package metrics

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func TestWriteArrowWithoutTheBuildTagSaysHowToGetIt(t *testing.T) {
	db := open(t, Options{})
	_, err := db.WriteArrow(context.Background(), &bytes.Buffer{}, "select 1")
	if !errors.Is(err, ErrNoArrow) || ArrowAvailable {
		t.Fatalf("err = %v, available = %v; want ErrNoArrow", err, ArrowAvailable)
	}
}
