package metrics_test

import (
	"context"
	"fmt"

	"github.com/retrace-dev/retrace/metrics"
)

// One database, loaded once, answers many metrics and queries: the fixed
// cost of Open and Load is paid once, and each named metric is planned
// once however often it is asked.
func ExampleDB_loadOnceAskMany() {
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.Load(ctx, "../trajectory/testdata/valid/basic.jsonl"); err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		t, err := db.Metric(ctx, "sessions")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("sessions rows:", len(t.Rows))
	}
	t, err := db.Query(ctx, "SELECT count(*) FROM tool_calls")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("tool calls:", t.Rows[0][0])
	// Output:
	// sessions rows: 1
	// sessions rows: 1
	// tool calls: 1
}
