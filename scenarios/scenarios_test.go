package scenarios

import (
	"context"
	"strings"
	"testing"
)

// runSuite runs suite with defaults and fails the test on retrace's own errors.
func runSuite(t *testing.T, suite []*Scenario, opts Options) *Results {
	t.Helper()
	res, err := Run(context.Background(), suite, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheBuiltinSuitePasses(t *testing.T) {
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(suite) == 0 {
		t.Fatal("the built-in suite is empty")
	}
	res := runSuite(t, suite, Options{})
	if res.Worst() != VerdictPass {
		var b strings.Builder
		res.WriteTable(&b)
		t.Fatalf("the built-in suite does not pass:\n%s", b.String())
	}
}
