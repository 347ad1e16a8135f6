// Package condition is the one grammar of retrace's conditions on
// numbers: an eval scenario's metric thresholds (expect.metrics, package
// scenarios) and retrace diff's gates (--gate, package diff) are both a
// Condition, read by Parse and decided by Decide, so that a threshold and
// a gate that say the same thing are written and decided the same way.
// The aggregate inside a condition is the metrics package's
// (metrics.Aggregate), which also names retrace diff's rows.
//
// # Grammar
//
//	condition  = aggregate comparison rhs
//	           | "no new detector" severity          (a gate only)
//	           | "no regressed"                      (a gate only)
//	aggregate  = function "(" subject { "," key "=" value } ")"
//	function   = "p50" | "p90" | "p95" | "p99" | "mean" | "min" | "max" | "rate" | "count"
//	comparison = "<" | "<=" | ">" | ">=" | "==" | "!="
//	rhs        = number [unit]
//	           | [number "*"] "base" [ ("+" | "-") number [unit] ]   (a gate only)
//	number     = digit { digit } [ "." digit { digit } ]
//	unit       = "ms" | "s" | "m"   (a duration: required)   | "%"   (a rate: optional)
//	severity   = "error" | "warning" | "info"
//	subject, key, value = a name: a letter or _ then letters, digits, _ . : -
//
// Spaces may stand between tokens, but not between a number and its
// unit; put spaces around the - of base - 5ms. The subjects, filters and
// their meaning are the metrics package's (metrics.Aggregate): p95(bash)
// is p95(duration, tool=bash), rate(failure, tool=bash) is among the bash
// calls.
//
// Where a condition is written decides what it may say (Use):
//
//   - A threshold (Threshold) compares with a number, by any comparison,
//     any aggregate: "p95(bash) < 2s", "rate(failure) <= 10%",
//     "count(tool_call, tool=read) >= 2", "mean(turns) != 3".
//   - A gate (Gate) compares a pN, mean or rate (a count grows with the
//     runs, so two sides of different sizes cannot be compared by it) with
//     <, <=, > or >= (an interval cannot show equality), against a number
//     or against the base side: "p95(bash) <= 1.2*base", "rate(failure)
//     <= base + 2%"; or it is "no new detector SEVERITY" or "no
//     regressed".
//
// A bad condition is refused with every problem at its column
// (metrics.ExprErrors, wrapping metrics.ErrExpr).
//
// # Deciding
//
// Decide compares an interval of the value with the limit: pass when the
// whole interval holds, fail when none of it does, otherwise
// inconclusive; an interval without samples (stats.Interval.Valid false)
// is inconclusive, never a pass. A threshold's value is one number, an
// interval of width zero; a gate's is a confidence interval. Against
// base, what is compared is the difference candidate − base, with the
// limit (k−1)·base + d (LimitAt).
package condition
