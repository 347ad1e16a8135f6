package report

import (
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// toInt reads a DuckDB integer (sums are HUGEINT, read as *big.Int) as an
// int64; NULL and anything else not a number are 0.
func toInt(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int16:
		return int64(v)
	case int8:
		return int64(v)
	case uint64:
		return int64(v)
	case uint32:
		return int64(v)
	case int:
		return int64(v)
	case float64:
		return int64(v)
	case *big.Int:
		return v.Int64()
	case duckdb.Decimal:
		return int64(v.Float64())
	}
	return 0
}

// toFloat reads a DuckDB number as a float64; NULL is 0.
func toFloat(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case duckdb.Decimal:
		return v.Float64()
	case nil:
		return 0
	}
	return float64(toInt(v))
}

// toString reads a DuckDB value as text; NULL is "".
func toString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(v)
}

// toBool reads a DuckDB boolean; NULL is false.
func toBool(v any) bool {
	b, _ := v.(bool)
	return b
}
